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



def _programs(lib):
    """In-place writes without grad, in ``lib`` (ember, or torch as the oracle)."""

    class TripleInPlace(lib.autograd.Function):
        """Writes its input and returns it (mark_dirty): the output's history is this
        Function's node, whose gradient reaches the input's history from before the write."""

        @staticmethod
        def forward(ctx, x):
            x.mul_(3)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    def dirty(x):
        return (TripleInPlace.apply((x * 2).clone()) * x).sum()

    def write(x):  # the write keeps y's history: y's gradient reaches x through x * x
        y = x * x
        with lib.no_grad():
            y.mul_(2)
        return y

    def write_read(x):  # ... also when y is read again in the compiled region
        y = x * x
        with lib.no_grad():
            y.mul_(2)
        return (y * x).sum()

    def write_view(x):  # a view written: the view and its base both keep theirs
        y = x * x
        v = y[1:]
        with lib.no_grad():
            v.mul_(2)
        return (y * x).sum() + v.sum()

    def write_detached(x):  # a write through detach() keeps y's history too (any mode)
        y = x * x
        y.detach().mul_(2)
        y.data[1:].add_(1)
        return (y * x).sum()

    def read_detached(x):  # detach() and its views carry no history
        y = x * x
        return (y.detach() * x).sum() + (y.detach()[1:] * x[1:]).sum()

    def view_read_without_grad(x):  # a view of a written base, first read under no_grad,
        y = x * x                     # keeps the history of the base's new value
        v = y[1:]
        y.mul_(2)
        with lib.no_grad():
            s = v.sum()
        return (v * x[1:]).sum() + s

    return {f.__name__: f for f in (dirty, write, write_read, write_view, write_detached,
                                    read_detached, view_read_without_grad)}


@pytest.mark.parametrize("name", ["dirty", "write", "write_read", "write_view",
                                  "write_detached", "read_detached", "view_read_without_grad"])
def test_write_without_grad_keeps_the_history_as_eager(name):
    import torch
    x = np.array([1.0, 2.0, -3.0])
    xt = torch.tensor(x, requires_grad=True)
    want = _programs(torch)[name](xt)
    want.sum().backward()
    fn = _programs(ember)[name]
    for backend in ("eager", "aot_eager", "inductor"):
        ember._dynamo.reset()
        xc = ember.from_numpy(x.copy()).requires_grad_(True)
        out = ember.compile(fn, backend=backend)(xc)
        out.sum().backward()
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        np.testing.assert_array_equal(xc.grad.numpy(), xt.grad.numpy())


def test_write_without_grad_is_one_graph():
    ember._dynamo.reset()
    x = np.array([1.0, 2.0, -3.0])
    xc = ember.from_numpy(x).requires_grad_(True)
    out = ember.compile(_programs(ember)["write_read"], fullgraph=True, backend="inductor")(xc)
    out.backward()
    # d/dx sum(y * x), y = 2 x^2 in value and x^2 in history: 2 x^2 + x * 2x
    np.testing.assert_array_equal(xc.grad.numpy(), 4 * x ** 2)
