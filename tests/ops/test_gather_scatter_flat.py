"""gather / scatter / scatter_add / scatter_reduce on flat indices (ops.indexing._flat_index):
against torch, bit for bit, on every dim, indices smaller than the input, non-contiguous
inputs, int32 indices, duplicates (added in torch's order), 0-dim and empty cases, gradients
and out-of-range errors."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)


def _both(fn, *arrays):
    return [fn(lib, *[lib.from_numpy(a.copy()) for a in arrays]) for lib in (torch, ember)]


def _eq(t, e):
    t, e = t.detach().numpy(), e.detach().numpy()
    assert t.dtype == e.dtype and t.shape == e.shape
    np.testing.assert_array_equal(e, t)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("idt", [np.int64, np.int32])
def test_gather_and_scatter_add_bitexact(dim, idt):
    x = RNG.standard_normal((5, 6, 7)).astype(np.float32)
    ishape = [4, 5, 3]
    d = dim % 3
    ishape[d] = 9  # longer than x along dim: repeats
    idx = RNG.integers(0, x.shape[d], ishape).astype(idt)
    _eq(*_both(lambda lib, a, i: a.gather(dim, i), x, idx))
    _eq(*_both(lambda lib, a, i: a.transpose(0, 2).contiguous().transpose(0, 2).gather(dim, i),
               x, idx))  # a non-contiguous input
    src = RNG.standard_normal(ishape).astype(np.float32)
    _eq(*_both(lambda lib, a, i, s: a.scatter_add(dim, i, s), x, idx, src))
    _eq(*_both(lambda lib, a, i, s: a.scatter(dim, i[:, :1] * 0, s), x, idx, src))
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            _eq(*_both(lambda lib, a, i, s: a.scatter_reduce(dim, i, s, red, include_self=inc),
                       x, idx, src))


def test_scatter_value_zero_dim_and_empty():
    x = RNG.standard_normal((3, 4))
    idx = np.array([[0, 2], [1, 1]])
    _eq(*_both(lambda lib, a, i: a.scatter(1, i, 2.5), x, idx))
    _eq(*_both(lambda lib, a, i: a.scatter(1, i, 2.5, reduce="multiply"), x, idx))
    s0, i0 = np.array(3.0), np.array(0)
    _eq(*_both(lambda lib, a, i: a.gather(0, i), s0, i0))
    _eq(*_both(lambda lib, a, i, s: a.scatter_add(0, i, s), s0, i0, np.array(2.0)))
    e = np.zeros((3, 0), np.int64)
    _eq(*_both(lambda lib, a, i: a.gather(1, i), x, e))
    _eq(*_both(lambda lib, a, i: a.scatter_add(1, i, a[:, :0]), x, e))


def test_gradients_and_errors():
    x = RNG.standard_normal((4, 8))
    idx = RNG.integers(0, 8, (4, 12))
    src = RNG.standard_normal((4, 12))
    grads = []
    for lib in (torch, ember):
        a = lib.from_numpy(x).requires_grad_()
        s = lib.from_numpy(src).requires_grad_()
        i = lib.from_numpy(idx)
        (a.gather(1, i) * 3).sum().backward()
        (a.scatter_add(1, i, s) ** 2).sum().backward()
        grads.append((a.grad.numpy(), s.grad.numpy()))
    for t, e in zip(*grads):
        np.testing.assert_array_equal(e, t)
    for lib in (torch, ember):
        a = lib.from_numpy(x)
        bad = lib.from_numpy(np.array([[8]]))
        with pytest.raises(RuntimeError, match="out of bounds"):
            a.gather(1, bad)
        with pytest.raises(RuntimeError, match="out of bounds"):
            a.scatter_add(1, bad, a[:1, :1])
        with pytest.raises(RuntimeError, match="out of bounds"):
            a.gather(1, -bad)


def test_one_hot_flat_store():
    cases = [(RNG.integers(0, 256, 4096), 256), (RNG.integers(0, 5, (3, 4)), -1),
             (np.array([], np.int64), 3), (np.array(4), 7), (np.arange(6).reshape(2, 3).T, 6)]
    for v, c in cases:
        e = ember.nn.functional.one_hot(ember.from_numpy(np.asarray(v, np.int64)), c)
        t = torch.nn.functional.one_hot(torch.from_numpy(np.asarray(v, np.int64)), c)
        _eq(t, e)
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="smaller than num_classes"):
            lib.nn.functional.one_hot(lib.tensor([3]), 3)
        with pytest.raises(RuntimeError, match="non-negative"):
            lib.nn.functional.one_hot(lib.tensor([-1]), 3)
