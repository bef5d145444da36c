"""autograd.Function calls go through the dispatcher (issue 10): a mode sees the forward and
the backward each as one operator call; passing them on keeps every semantic of the
Function (ctx, save_for_backward, mark_dirty, mark_non_differentiable, once_differentiable)
and of the transforms around it (vmap, forward AD)."""
import numpy as np
import pytest
import torch

import ember
from ember import DispatchMode
from ember.autograd import Function, once_differentiable


class Recording(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append((op.name, args, dict(kwargs)))
        return op(*args, **kwargs)


def _fns(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x ** 3 * scale

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2 * ctx.scale, None

    class SplitSetup(lib.autograd.Function):  # forward without ctx, setup_context
        @staticmethod
        def forward(x):
            return x.sin(), (x * 2).floor()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.mark_non_differentiable(output[1])

        @staticmethod
        def backward(ctx, g, g_floor):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Once(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        @once_differentiable if lib is ember else torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.exp()
    return Cube, SplitSetup, Dirty, Once


E_CUBE, E_SPLIT, E_DIRTY, E_ONCE = _fns(ember)
T_CUBE, T_SPLIT, T_DIRTY, T_ONCE = _fns(torch)
DATA = np.array([0.5, -1.25, 2.0])


def test_mode_sees_forward_and_backward_as_one_call_each():
    x = ember.tensor(DATA, requires_grad=True)
    with Recording() as m:
        y = E_CUBE.apply(x, 2.0)
        y.sum().backward()
    names = [c[0] for c in m.calls]
    assert names[0] == "autograd_function_apply"
    name, args, params = m.calls[0]
    assert args[0] is x and args[1] == 2.0 and params == {"fn": E_CUBE, "kwargs": {}}
    # passed on, the forward's operators are seen after the call, as before
    assert "pow" in names[1:names.index("sum")]
    assert names.count("autograd_function_backward") == 1
    b = names.index("autograd_function_backward")
    _, bargs, bparams = m.calls[b]
    assert bparams["fn"] is E_CUBE and bparams["ctx"] is y.grad_fn and len(bargs) == 1
    assert "mul" in names[b + 1:]  # the backward's operators, after its call
    np.testing.assert_allclose(x.grad.numpy(), 6 * DATA ** 2)


def test_a_mode_can_take_the_whole_call():
    class Replace(DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            if op.name == "autograd_function_apply":
                return ember.zeros(3)
            return op(*args, **kwargs)
    with Replace():
        r = E_CUBE.apply(ember.ones(3), 1.0)
    np.testing.assert_array_equal(r.numpy(), [0.0, 0.0, 0.0])


@pytest.mark.parametrize("moded", [False, True])
def test_function_semantics_unchanged_under_a_mode(moded):
    def run(lib, fns, mode):
        cube, split, dirty, once = fns
        x = lib.tensor(DATA, requires_grad=True)
        with (mode if mode is not None else _Null()):
            a = cube.apply(x, 1.5)
            s, f = split.apply(x)
            d = dirty.apply(x.clone())
            o = once.apply(x)
            loss = (a + s + d + o).sum() + f.sum()
            (g,) = lib.autograd.grad(loss, x)
        return g, f, o
    ge, fe, oe = run(ember, (E_CUBE, E_SPLIT, E_DIRTY, E_ONCE), Recording() if moded else None)
    gt, ft, ot = run(torch, (T_CUBE, T_SPLIT, T_DIRTY, T_ONCE), None)
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-12)
    assert not fe.requires_grad and ft.requires_grad is False
    # once_differentiable: differentiating its backward again raises
    x = ember.tensor(DATA, requires_grad=True)
    w = ember.ones(3, requires_grad=True)  # a gradient that requires grad itself
    with (Recording() if moded else _Null()):
        (g,) = ember.autograd.grad(E_ONCE.apply(x), x, grad_outputs=w, create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_saved_tensor_modified_in_place_still_raises_under_a_mode():
    x = ember.tensor(DATA, requires_grad=True)
    with Recording():
        h = x * 1
        y = E_CUBE.apply(h, 1.0)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_vmap_and_grad_through_a_custom_function():
    xs = ember.tensor(np.arange(6.0).reshape(3, 2) / 4, requires_grad=True)
    out = ember.vmap(lambda v: E_CUBE.apply(v, 2.0).sum())(xs)
    np.testing.assert_allclose(out.detach().numpy(), (2 * (xs.detach().numpy() ** 3)).sum(1))
    per_sample = ember.func.vmap(ember.func.grad(lambda v: E_CUBE.apply(v, 2.0).sum()))(
        xs.detach())
    np.testing.assert_allclose(per_sample.numpy(), 6 * xs.detach().numpy() ** 2)


def test_forward_ad_through_a_custom_function():
    import ember.autograd.forward_ad as fwAD
    x = ember.tensor(DATA)
    t = ember.tensor([1.0, 0.5, -1.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, t)
        y = E_SPLIT.apply(dual)[0]
        tangent = fwAD.unpack_dual(y).tangent
    np.testing.assert_allclose(tangent.numpy(), np.cos(DATA) * t.numpy(), rtol=1e-6)


def test_nested_functions_under_a_mode():
    class Outer(Function):
        @staticmethod
        def forward(ctx, x):
            return E_CUBE.apply(x, 1.0) + 1

        @staticmethod
        def backward(ctx, g):
            return g * 7
    x = ember.tensor(DATA, requires_grad=True)
    with Recording() as m:
        y = Outer.apply(x)
        y.sum().backward()
    names = [c[0] for c in m.calls]
    assert names[:2] == ["autograd_function_apply", "autograd_function_apply"]
    assert m.calls[0][2]["fn"] is Outer and m.calls[1][2]["fn"] is E_CUBE
    np.testing.assert_allclose(y.detach().numpy(), DATA ** 3 + 1)
    np.testing.assert_allclose(x.grad.numpy(), [7.0, 7.0, 7.0])
