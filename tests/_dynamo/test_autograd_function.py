"""A custom autograd.Function in a compiled region: the region breaks at it (its forward and
backward are the user's Python, which the engine runs), keeping the Function's own backward;
fullgraph=True names the Function."""
import numpy as np
import pytest

import ember
from ember.autograd import Function


class StraightThroughSign(Function):
    """sign() forward, identity backward: its gradient is not the ops' derivative."""

    @staticmethod
    def forward(ctx, x):
        return x.sign()

    @staticmethod
    def backward(ctx, g):
        return g


def _f(x):
    return (StraightThroughSign.apply(x * 3) * x).sum()


def test_compiled_region_keeps_the_functions_backward():
    ember._dynamo.reset()
    x = ember.from_numpy(np.array([-1.5, 0.5, 2.0]))
    xe = x.clone().requires_grad_(True)
    _f(xe).backward()
    for backend in ("eager", "aot_eager", "inductor"):
        xc = x.clone().requires_grad_(True)
        out = ember.compile(_f, backend=backend)(xc)
        out.backward()
        assert out.item() == _f(x).item()
        # d/dx [st(3x) * x] = 3 * x (straight-through) + sign(3x)
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy())
        np.testing.assert_allclose(xc.grad.numpy(), 3 * x.numpy() + np.sign(x.numpy()))


def test_fullgraph_names_the_function():
    ember._dynamo.reset()
    with pytest.raises(ember._dynamo.exc.Unsupported,
                       match="custom autograd.Function StraightThroughSign"):
        ember.compile(_f, fullgraph=True)(ember.ones(3))
