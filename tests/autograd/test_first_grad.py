"""A leaf's first ``.grad``: torch's layout contract (the leaf's own strides when it is
dense) and its buffer taken without a copy only when nothing but the engine refers to it,
so later accumulation into ``.grad`` never writes into a tensor someone else holds."""
import sys

import numpy as np
import pytest
import torch

import ember


def _both(fn):
    return fn(ember), fn(torch)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("grad_layout", ["contiguous", "channels_last"])
def test_grad_strides_follow_the_leaf_as_torch(layout, grad_layout):
    def run(m):
        x = m.arange(2 * 3 * 4 * 5, dtype=m.float32).reshape(2, 3, 4, 5)
        if layout == "channels_last":
            x = x.contiguous(memory_format=m.channels_last)
        x.requires_grad_()
        g = m.ones(2, 3, 4, 5) * 2
        if grad_layout == "channels_last":
            g = g.contiguous(memory_format=m.channels_last)
        (x * 3).backward(g)
        return x.grad.stride(), x.grad.detach().numpy().copy()
    (es, ev), (ts, tv) = _both(run)
    assert es == ts
    np.testing.assert_array_equal(ev, tv)


def test_a_strided_leaf_gets_a_row_major_grad_as_torch():
    def run(m):
        base = m.zeros(4, 6)
        x = base[:, ::2].detach().requires_grad_()
        (x * 2).sum().backward()
        return x.grad.stride(), x.grad.numpy().copy()
    (es, ev), (ts, tv) = _both(run)
    assert es == ts
    np.testing.assert_array_equal(ev, tv)


def test_accumulation_never_writes_into_a_tensor_a_hook_kept():
    x = ember.ones(3, requires_grad=True)
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x.exp() * 2).sum().backward()
    first = kept[0].numpy().copy()
    (x * 5).sum().backward()
    np.testing.assert_array_equal(kept[0].numpy(), first)
    np.testing.assert_allclose(x.grad.numpy(), first + 5)


def test_one_gradient_for_two_leaves_gives_each_its_own_buffer():
    x, w = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    (x + w).relu().sum().backward()    # add's backward hands the same tensor to both
    assert not np.shares_memory(x.grad.numpy(), w.grad.numpy())
    (x * 4).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5, 5, 5])
    np.testing.assert_array_equal(w.grad.numpy(), [1, 1, 1])


def test_retained_and_returned_gradients_stay_apart_from_grad():
    x = ember.ones(4, requires_grad=True)
    y = x.exp()
    y.retain_grad()
    (y * 3).sum().backward()
    assert not np.shares_memory(y.grad.numpy(), x.grad.numpy())
    root = ember.full((4,), 2.0)
    x.grad = None
    x.backward(root)                   # the user's own root gradient
    assert not np.shares_memory(root.numpy(), x.grad.numpy())
    x.backward(root)
    np.testing.assert_array_equal(root.numpy(), [2, 2, 2, 2])
    np.testing.assert_array_equal(x.grad.numpy(), [4, 4, 4, 4])


def _fresh_gradient_copies(monkeypatch, shape):
    """Backward of a Function whose gradient is a fresh array nothing else refers to, with
    engine's NumPy counting its copies of a gradient; returns (leaf, number of copies)."""
    from ember.autograd import engine
    copies = []

    class CountingNumPy:
        def __getattr__(self, name):
            return getattr(np, name)

        def copyto(self, *a, **k):
            copies.append(1)
            return np.copyto(*a, **k)
    monkeypatch.setattr(engine, "_np", CountingNumPy())

    class Fresh(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ember.full(g.shape, 3.0)

    x = ember.randn(*shape, requires_grad=True)
    Fresh.apply(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(shape, 3.0, np.float32))
    return x, len(copies)


def test_a_fresh_gradient_is_taken_without_a_copy(monkeypatch):
    """A backward that makes a fresh array nothing else refers to: it becomes .grad as it
    is (torch steals it too); the copy path is not taken.  (The engine counts references
    with sys.getrefcount: tests/conftest.py removes the frame-evaluation shim a failed real
    torch.compile leaves installed, under which every call holds one more.)"""
    assert _fresh_gradient_copies(monkeypatch, (64, 64))[1] == 0


def test_interpreters_with_other_reference_counts_always_copy(monkeypatch):
    """Where the engine's reference counts are not known to hold (CPython 3.14's borrowed
    loads, the free-threaded build, other implementations) the first gradient is copied,
    even a fresh one nothing else refers to."""
    from ember.autograd import engine
    assert engine._STEALS == (sys.version_info[:2] < (3, 14) and
                              sys.implementation.name == "cpython" and
                              getattr(sys, "_is_gil_enabled", lambda: True)())
    monkeypatch.setattr(engine, "_STEALS", False)
    assert _fresh_gradient_copies(monkeypatch, (8,))[1] == 1
