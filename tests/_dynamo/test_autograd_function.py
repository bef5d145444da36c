"""A custom autograd.Function in a compiled region: its forward is captured and the region
breaks where its output is read when gradients are needed (its backward is the user's Python,
which the engine runs)."""
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


def test_fullgraph_without_gradients_is_one_graph_and_with_them_breaks():
    ember._dynamo.reset()
    x = ember.from_numpy(np.array([-1.5, 0.5, 2.0]))
    assert ember.compile(_f, fullgraph=True)(x).item() == _f(x).item()  # nothing to break
    ember._dynamo.reset()
    with pytest.raises(ember._dynamo.exc.Unsupported, match="graph break under fullgraph"):
        ember.compile(_f, fullgraph=True)(x.clone().requires_grad_(True))
