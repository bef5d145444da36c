"""autograd.Function's class-level surface (torch's Function derives from FunctionCtx and
the hook mixin), against torch, and the ctx attributes behind it."""
import warnings

import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
CTX_METHODS = ["save_for_backward", "save_for_forward", "mark_dirty", "mark_non_differentiable",
               "set_materialize_grads", "mark_shared_storage", "register_hook",
               "register_prehook", "name", "maybe_clear_saved_tensors"]


@LIBS
def test_class_level_names(lib):
    F = lib.autograd.Function
    for n in CTX_METHODS:
        assert callable(getattr(F, n)), n
    for n in ["needs_input_grad", "saved_tensors", "to_save", "non_differentiable",
              "dirty_tensors", "saved_for_forward", "materialize_grads", "metadata",
              "next_functions", "requires_grad", "saved_variables"]:
        assert hasattr(F, n), n
    assert F.generate_vmap_rule is False
    assert F.clear_saved_tensors_on_access is False and F.boxed_grads_call is False
    with pytest.raises(NotImplementedError, match="generate_vmap_rule=True"):
        F.vmap(None, (0,), lib.ones(2))


def _scale(lib):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            ctx.seen = (ctx.requires_grad, ctx.dirty_tensors, ctx.needs_input_grad)
            return g * 2, None
    return Scale


@LIBS
def test_ctx_attributes(lib):
    x = lib.ones(2, requires_grad=True)
    y = _scale(lib).apply(x, lib.ones(2))
    c = y.grad_fn
    assert c.requires_grad is True and c.dirty_tensors is None
    assert c.needs_input_grad == (True, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (s,) = c.saved_variables
        c.mark_shared_storage((x, y))  # deprecated: warns, does nothing
    assert s is x or np.array_equal(s.detach().numpy(), x.detach().numpy())
    with pytest.warns(DeprecationWarning):
        c.saved_variables
    y.sum().backward(retain_graph=True)
    assert c.seen == (True, None, (True, False))
    c.maybe_clear_saved_tensors()   # outside a backward the graph is kept
    assert len(c.saved_tensors) == 1
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


@LIBS
def test_maybe_clear_saved_tensors_inside_backward(lib):
    class Clears(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            ctx.maybe_clear_saved_tensors()
            return g * a

    x = lib.full((2,), 3.0, requires_grad=True)
    y = Clears.apply(x)
    y.sum().backward(retain_graph=True)   # retained: still readable
    assert len(y.grad_fn.saved_tensors) == 1
    y.sum().backward()                    # not retained: freed by the call
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.grad_fn.saved_tensors
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 6.0])


def _two_outputs(lib, materialize):
    class TwoOut(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append(None if g2 is None else g2.tolist())
            return g1 * 3
    seen = []
    return TwoOut, seen


@LIBS
@pytest.mark.parametrize("materialize", [True, False])
def test_unused_output_gradient_is_none_without_materializing(lib, materialize):
    fn, seen = _two_outputs(lib, materialize)
    x = lib.ones(2, requires_grad=True)
    a, _ = fn.apply(x)
    a.sum().backward()
    # torch: zeros by default, None after set_materialize_grads(False)
    assert seen == [[0.0, 0.0]] if materialize else seen == [None]
    assert x.grad.tolist() == [3.0, 3.0]
