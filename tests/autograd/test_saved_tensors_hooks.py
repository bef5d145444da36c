"""autograd.graph.saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks,
against torch: pack runs when a tensor is saved for backward, unpack when backward reads it."""
import importlib

import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _graph(lib):
    return importlib.import_module(lib.__name__ + ".autograd.graph")


def _np(t):
    return t.detach().numpy()


@LIBS
def test_pack_on_save_unpack_on_backward(lib):
    G = _graph(lib)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    calls = []

    def pack(t):
        calls.append("pack")
        return t * 1  # a copy, made with the hooks off

    def unpack(p):
        calls.append("unpack")
        return p

    with G.saved_tensors_hooks(pack, unpack):
        z = x.exp().sin()   # exp saves its result, sin its input
    assert calls == ["pack", "pack"]
    z.sum().backward()
    assert calls == ["pack", "pack", "unpack", "unpack"]
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(_np(x.grad), np.cos(np.exp(v)) * np.exp(v), rtol=1e-5)


@LIBS
def test_unpacked_value_is_what_backward_uses(lib):
    G = _graph(lib)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t.detach() * 0 + 3.0, lambda p: p):
        y = (x * x).sum()   # mul saves both inputs: backward sees 3s
    (g,) = lib.autograd.grad(y, x)
    np.testing.assert_allclose(_np(g), [6.0, 6.0])


@LIBS
def test_hooked_tensor_skips_the_version_check(lib):
    G = _graph(lib)
    x = lib.tensor([1.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t, lambda t: t):
        w = x.sin()
    with lib.no_grad():
        x.add_(1)
    w.backward()
    np.testing.assert_allclose(_np(x.grad), np.cos([2.0]), rtol=1e-6)


@LIBS
def test_saved_output_unpacks_with_its_history(lib):
    G = _graph(lib)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        y = x.exp()
    (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_np(gg), np.exp([1.0, 2.0]), rtol=1e-6)


@LIBS
def test_custom_function_save_for_backward_is_hooked(lib):
    G = _graph(lib)

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    calls = []
    x = lib.tensor([1.0, 3.0], requires_grad=True)
    with G.saved_tensors_hooks(lambda t: calls.append("pack") or t * 1,
                               lambda p: calls.append("unpack") or p):
        y = Square.apply(x)
    assert calls == ["pack"]
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    np.testing.assert_allclose(_np(x.grad), [2.0, 6.0])


@LIBS
def test_save_on_cpu(lib):
    G = _graph(lib)
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with G.save_on_cpu():
        y = (x * x.exp()).sum()
    (g,) = lib.autograd.grad(y, x)
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(_np(g), np.exp(v) * (1 + v), rtol=1e-6)


@LIBS
def test_disable_saved_tensors_hooks(lib):
    G = _graph(lib)
    with G.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with G.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="not while hooked"):
            with G.disable_saved_tensors_hooks("not while hooked"):
                pass
    with G.saved_tensors_hooks(lambda t: t, lambda t: t):   # usable again afterwards
        pass
