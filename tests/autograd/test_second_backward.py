"""A second backward through part of a freed graph, against torch: only a node whose
saved tensors were freed refuses it."""
import numpy as np
import pytest
import torch

import ember


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_node_that_saved_nothing_runs_again(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = lib.add(x, 1)
    (y * 2).sum().backward()
    (g,) = lib.autograd.grad(lib.exp(y).sum(), x)
    np.testing.assert_allclose(_np(g), np.exp([2.0, 3.0]), rtol=1e-6)
    s = x.sum()
    s.backward()
    s.backward()  # SumBackward saved no tensor
    np.testing.assert_allclose(_np(x.grad), [4.0, 4.0])


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_node_that_saved_tensors_still_refuses(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.exp(x) * x
    w.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        w.sum().backward()


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_function_that_saved_nothing_runs_again(lib):
    class Triple(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = Triple.apply(x)
    y.sum().backward()
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [6.0, 6.0])
    z = Square.apply(x)
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.sum().backward()
