"""The C index_add loop: the same sums as np.add.at and torch's index_add, bit for bit (slices
are added in index order), on every dimension, with repeated rows, alpha and broadcast sources;
and embedding's backward through it."""
import numpy as np
import pytest
import torch

import ember
from ember._core.ckernels import indexing as ck_indexing


def _case(dtype, shape, dim, m, seed):
    rng = np.random.default_rng(seed)
    out = rng.standard_normal(shape).astype(dtype)
    src_shape = list(shape)
    src_shape[dim] = m
    src = rng.standard_normal(src_shape).astype(dtype)
    idx = rng.integers(0, shape[dim], m)  # repeats: m > rows
    return out, src, idx


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, dim, m", [((50, 64), 0, 4096), ((6, 40, 33), 1, 300),
                                          ((5, 7, 90), 2, 500), ((30, 3, 4, 5), 0, 200)])
def test_kernel_equals_add_at_bitwise(dtype, shape, dim, m):
    out, src, idx = _case(dtype, shape, dim, m, 0)
    expected = out.copy()
    key = (slice(None),) * dim + (idx,)
    np.add.at(expected, key, src)
    assert ck_indexing.index_add(out, dim, idx, src)
    np.testing.assert_array_equal(out, expected)


def test_kernel_declines_what_it_does_not_handle():
    out, src, idx = _case(np.float32, (50, 64), 0, 4096, 1)
    before = out.copy()
    assert not ck_indexing.index_add(out.astype(np.float16), 0, idx, src.astype(np.float16))
    assert not ck_indexing.index_add(out, 0, idx, src.astype(np.float64))  # mixed dtypes
    assert not ck_indexing.index_add(out[:, ::2], 0, idx, src[:, ::2])  # strided result
    np.testing.assert_array_equal(out, before)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("alpha", [1, 0.5])
def test_index_add_matches_torch_bitwise(dim, alpha):
    out, src, idx = _case(np.float32, (40, 60), dim % 2, 3000, 2)
    got = ember.from_numpy(out).index_add(dim, ember.from_numpy(idx), ember.from_numpy(src),
                                          alpha=alpha)
    want = torch.from_numpy(out).index_add(dim, torch.from_numpy(idx), torch.from_numpy(src),
                                           alpha=alpha)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_index_add_broadcast_source_and_inplace():
    out, src, idx = _case(np.float64, (20, 128), 0, 2000, 3)
    row = np.random.default_rng(4).standard_normal(128)
    got = ember.from_numpy(out.copy())
    got.index_add_(0, ember.from_numpy(idx), ember.from_numpy(row).expand(2000, 128))
    want = torch.from_numpy(out.copy())
    want.index_add_(0, torch.from_numpy(idx), torch.from_numpy(row).expand(2000, 128))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_backward_matches_torch_bitwise(padding_idx):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((100, 128)).astype(np.float32)
    idx = rng.integers(0, 100, (64, 64))
    g = rng.standard_normal((64, 64, 128)).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        weight = lib.tensor(w, requires_grad=True)
        lib.nn.functional.embedding(lib.from_numpy(idx), weight, padding_idx=padding_idx) \
            .backward(lib.from_numpy(g))
        grads.append(weight.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
