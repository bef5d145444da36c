"""Ops whose gradient reads only their indices (or dropout's mask) do not save their value
output, as torch's: an in-place op on the values (MaxPool2d then ReLU(inplace=True), as in
the spatial transformer tutorial) leaves backward working, with torch's gradients."""
import numpy as np
import pytest
import torch

import ember

CASES = {
    "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(x, 2),
    "max_pool2d_indices": lambda L, x: L.nn.functional.max_pool2d(x, 2, return_indices=True)[0],
    "max_pool1d": lambda L, x: L.nn.functional.max_pool1d(x.flatten(2), 3),
    "adaptive_max_pool2d": lambda L, x: L.nn.functional.adaptive_max_pool2d(x, 2),
    "max_dim": lambda L, x: x.max(1)[0],
    "min_dim": lambda L, x: x.min(1).values,
    "sort": lambda L, x: x.sort(-1)[0],
    "topk": lambda L, x: x.topk(2, -1)[0],
    "kthvalue": lambda L, x: x.kthvalue(2, -1)[0],
    "median_dim": lambda L, x: x.median(-1)[0],
    "mode": lambda L, x: x.mode(-1)[0],
    "cummax": lambda L, x: x.cummax(-1)[0],
    "cummin": lambda L, x: x.cummin(-2)[0],
    "dropout": lambda L, x: L.nn.functional.dropout(x, 0.5, training=True),
    "rrelu": lambda L, x: L.nn.functional.rrelu(x, training=True),   # reads only the noise
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_inplace_on_value_output_then_backward(name):
    grads = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        x = lib.tensor(np.sin(np.arange(32.0)).reshape(1, 2, 4, 4),
                       dtype=lib.float32).requires_grad_()
        y = CASES[name](lib, x)
        y.mul_(3)       # bumps the values' version; torch's backward does not read them
        y.relu().sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_stn_localization_block():
    # the spatial transformer tutorial's localization net: MaxPool2d -> ReLU(True)
    for lib in (torch, ember):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3), lib.nn.MaxPool2d(2, stride=2),
                                lib.nn.ReLU(True))
        net(lib.ones(2, 1, 9, 9)).sum().backward()
        assert net[0].weight.grad.abs().sum().item() > 0
