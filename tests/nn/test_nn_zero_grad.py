"""Module.zero_grad(set_to_none=False) against torch: the same gradient tensor, detached in
place and zeroed by an operator (a dispatch mode sees it)."""
import warnings

import pytest
import torch

import ember


@pytest.mark.parametrize("create_graph", [False, True])
def test_zero_grad_keeps_the_tensor_and_detaches_it_like_torch(create_graph):
    res = []
    for lib in (ember, torch):
        m = lib.nn.Linear(2, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's create_graph reference-cycle notice
            (m(lib.ones(1, 2)) ** 2).sum().backward(create_graph=create_graph)
        g = m.weight.grad
        m.zero_grad(set_to_none=False)
        res.append((m.weight.grad is g, g.grad_fn is None, g.requires_grad,
                    g.abs().sum().item(), m.bias.grad.abs().sum().item()))
    assert res[0] == res[1] == (True, True, False, 0.0, 0.0)


def test_zero_grad_is_an_operator_call():
    seen = []

    class Record(ember.DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            seen.append(getattr(op, "base", op).name)
            return op(*args, **kwargs)
    m = ember.nn.Linear(2, 2)
    m(ember.ones(1, 2)).sum().backward()
    with Record():
        m.zero_grad(set_to_none=False)
    assert len(seen) == 2 and m.weight.grad.abs().sum().item() == 0.0
