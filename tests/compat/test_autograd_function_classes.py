"""torch.autograd.function.FunctionMeta / BackwardCFunction: the metaclass of Function and the
class of each Function's ctx, as torch arranges them."""
import numpy as np

import ember

import torch


def _double(lib):
    seen = {}

    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            seen["ctx"] = ctx
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2
    return Double, seen


def test_metaclass_and_backward_class():
    for lib in (torch, ember):
        fn = lib.autograd.function
        Double, seen = _double(lib)
        assert type(Double) is fn.FunctionMeta and isinstance(lib.autograd.Function,
                                                              fn.FunctionMeta)
        assert Double._backward_cls.__name__ == "DoubleBackward"
        assert issubclass(Double._backward_cls, fn.BackwardCFunction)
        assert issubclass(fn.BackwardCFunction, fn.FunctionCtx)
        x = lib.ones(2, requires_grad=True)
        y = Double.apply(x)
        ctx = seen["ctx"]
        assert type(ctx) is Double._backward_cls and y.grad_fn is ctx
        assert ctx._forward_cls is Double
        np.testing.assert_array_equal(ctx.apply_jvp(lib.ones(2)).detach().numpy(), [2.0, 2.0])
        y.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
