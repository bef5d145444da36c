"""Max pooling in generated C (codegen/c_externs): values, indices and gradients equal
eager and torch, for every window geometry, NaN and ties included; dtypes C does not
take keep the eager kernel."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

from .helpers import check, rand

GEOMETRIES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
              dict(kernel_size=3, stride=1, dilation=2, ceil_mode=True),
              dict(kernel_size=2, ceil_mode=True), dict(kernel_size=(2, 3), stride=(1, 2))]


@pytest.mark.parametrize("args", GEOMETRIES)
def test_max_pool2d_values_and_indices(args):
    x = rand(2, 3, 9, 9)
    c = check(lambda x: F.max_pool2d(x, return_indices=True, **args), x)
    assert "void extern" in c.source
    v, i = c(x)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x.numpy()), return_indices=True,
                                            **args)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("fn,shape", [(F.max_pool1d, (2, 3, 11)), (F.max_pool3d, (1, 2, 5, 6, 7))])
def test_max_pool_1d_3d(fn, shape):
    x = rand(*shape, dtype=ember.float64)
    check(lambda x: fn(x, 2, return_indices=True), x)


def test_nan_and_ties_pick_as_torch():
    a = np.zeros((1, 1, 4, 4), np.float32)
    a[0, 0, 0, 1] = a[0, 0, 1, 0] = 5.0          # a tie: the first wins
    a[0, 0, 2, 2], a[0, 0, 3, 3] = np.nan, np.nan  # two NaNs: the last wins
    a[0, 0, 2, 3] = 7.0
    x = ember.from_numpy(a)
    c = check(lambda x: F.max_pool2d(x, 2, return_indices=True), x)
    v, i = c(x)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(a), 2, return_indices=True)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


@pytest.mark.parametrize("args", GEOMETRIES[:3])
def test_max_pool_backward_through_training(args):
    # overlapping windows (stride < kernel) add several gradients into one input
    ember.manual_seed(0)
    x = rand(2, 2, 8, 8, seed=3)
    w = rand(2, 2, 8, 8, seed=4)

    def loss(x):
        return (F.max_pool2d(x, **args) * F.max_pool2d(w, **args)).sum()
    xe = x.clone().requires_grad_(True)
    loss(xe).backward()
    xc = x.clone().requires_grad_(True)
    ember.compile(loss, backend="inductor")(xc).backward()
    np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-6, atol=1e-6)
    xt = torch.from_numpy(x.numpy()).requires_grad_(True)
    wt = torch.from_numpy(w.numpy())
    (torch.nn.functional.max_pool2d(xt, **args) *
     torch.nn.functional.max_pool2d(wt, **args)).sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_integer_pooling_keeps_the_eager_kernel():
    x = ember.from_numpy(np.arange(2 * 36).reshape(2, 1, 6, 6) % 7)
    c = check(lambda x: F.max_pool2d(x, 2), x)
    assert "void extern" not in c.source
