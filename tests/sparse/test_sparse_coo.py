"""Sparse COO tensors against torch: construction, coalescing, conversion, products and
their gradients, the operations that raise."""
import warnings

import numpy as np
import pytest
import torch

import ember


def _t(x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "sparse invariant checks" notice
        return x()


IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]
VAL = [3.0, 4.0, 5.0, 1.5]


def test_construction_coalesce_and_accessors_match_torch():
    t = _t(lambda: torch.sparse_coo_tensor(IDX, VAL, (2, 3)))
    e = ember.sparse_coo_tensor(IDX, VAL, (2, 3))
    assert e.layout is ember.sparse_coo and e.is_sparse
    assert tuple(e.shape) == (2, 3) and e.dtype is ember.float32
    assert e.is_coalesced() == t.is_coalesced() is False
    assert e._nnz() == t._nnz() == 4
    assert e.sparse_dim() == t.sparse_dim() and e.dense_dim() == t.dense_dim()
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    with pytest.raises(RuntimeError, match="uncoalesced"):
        e.indices()
    ec, tc = e.coalesce(), t.coalesce()
    assert ec.is_coalesced()
    np.testing.assert_array_equal(ec.indices().numpy(), tc.indices().numpy())
    np.testing.assert_allclose(ec.values().numpy(), tc.values().numpy())
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy())
    assert "layout=ember.sparse_coo" in repr(ec) and "nnz=3" in repr(ec)


def test_dtype_and_size_inference():
    t = _t(lambda: torch.sparse_coo_tensor(IDX, [1, 2, 3, 4], dtype=torch.float64))
    e = ember.sparse_coo_tensor(IDX, [1, 2, 3, 4], dtype=ember.float64)
    assert tuple(e.shape) == tuple(t.shape) == (2, 3) and e.dtype is ember.float64
    ei = ember.sparse_coo_tensor(IDX, ember.ones(4), (2, 3), dtype=ember.int64)
    assert ei.dtype is ember.int64


def test_construction_errors():
    with pytest.raises(RuntimeError, match="same nnz"):
        ember.sparse_coo_tensor(IDX, [1.0, 2.0], (2, 3))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        ember.sparse_coo_tensor(IDX, VAL, (2, 2))
    with pytest.raises(RuntimeError):
        torch.sparse_coo_tensor(IDX, VAL, (2, 2), check_invariants=True)


def test_to_sparse_and_back():
    a = np.array([[0, 2.0, 0], [1.0, 0, 0], [0, 0, -3.0]], dtype=np.float32)
    e, t = ember.tensor(a).to_sparse(), torch.tensor(a).to_sparse()
    np.testing.assert_array_equal(e.indices().numpy(), t.indices().numpy())
    np.testing.assert_array_equal(e.values().numpy(), t.values().numpy())
    np.testing.assert_array_equal(e.to_dense().numpy(), a)
    e1, t1 = ember.tensor(a).to_sparse(1), torch.tensor(a).to_sparse(1)
    np.testing.assert_array_equal(e1.indices().numpy(), t1.indices().numpy())
    np.testing.assert_array_equal(e1.values().numpy(), t1.values().numpy())


@pytest.mark.parametrize("a", [np.float32(3.0), np.float32(0.0), np.zeros((2, 3), np.float32),
                               np.array([[[0, 1], [0, 0]], [[2, 0], [0, 0]]], np.float32)])
def test_to_sparse_every_sparse_dim_matches_torch(a):
    for sd in range(a.ndim + 1):
        try:
            t = torch.tensor(a).to_sparse(sd)
        except RuntimeError as err:
            with pytest.raises(RuntimeError, match=str(err).split(">")[0]):
                ember.tensor(a).to_sparse(sd)
            continue
        e = ember.tensor(a).to_sparse(sd)
        assert e.indices().dtype is ember.int64 and tuple(e.shape) == a.shape
        np.testing.assert_array_equal(e.indices().numpy(), t.indices().numpy())
        np.testing.assert_array_equal(e.values().numpy(), t.values().numpy())
        np.testing.assert_array_equal(e.to_dense().numpy(), a)
    with pytest.raises(RuntimeError, match=r"must be in \[0,%d\] range, but %d is given"
                       % (a.ndim, a.ndim + 1)):
        ember.tensor(a).to_sparse(a.ndim + 1)


@pytest.mark.parametrize("form", ["matmul", "mm", "spmm", "sparse.mm"])
def test_sparse_dense_products_and_gradients_match_torch(form):
    rs = np.random.RandomState(0)
    a = (rs.rand(5, 4) * (rs.rand(5, 4) > 0.6)).astype(np.float32)
    b = rs.randn(4, 3).astype(np.float32)
    outs = []
    for lib in (torch, ember):
        s = lib.tensor(a).to_sparse()
        d = lib.tensor(b, requires_grad=True)
        f = {"matmul": lambda: s @ d, "mm": lambda: lib.mm(s, d),
             "spmm": lambda: lib.spmm(s, d), "sparse.mm": lambda: lib.sparse.mm(s, d)}[form]
        r = f()
        if r.layout is not lib.strided:
            r = r.to_dense()
        (r * lib.arange(3.0)).sum().backward()
        outs.append((r.detach().numpy(), d.grad.numpy()))
    for t, e in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_smm_returns_a_sparse_product_like_torch():
    a = np.array([[0, 2.0], [1.0, 0]], dtype=np.float32)
    b = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    t = torch.smm(torch.tensor(a).to_sparse(), torch.tensor(b))
    e = ember.smm(ember.tensor(a).to_sparse(), ember.tensor(b))
    assert t.layout is torch.sparse_coo and e.layout is ember.sparse_coo
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy())


def test_dense_sparse_product_and_sums():
    rs = np.random.RandomState(1)
    a = (rs.rand(4, 4) > 0.5).astype(np.float32)
    d = rs.randn(3, 4).astype(np.float32)
    for lib in (torch, ember):
        s = lib.tensor(a).to_sparse()
        r = lib.tensor(d) @ s
        assert r.layout is lib.strided
        np.testing.assert_allclose(r.numpy(), d @ a, rtol=1e-5)
        dense = lib.eye(4) + s
        assert dense.layout is lib.strided
        np.testing.assert_allclose(dense.numpy(), np.eye(4) + a)
        ss = s + s
        assert ss.layout is lib.sparse_coo and ss.is_coalesced()
        np.testing.assert_allclose(ss.to_dense().numpy(), 2 * a)
        np.testing.assert_allclose((s * 3).to_dense().numpy(), 3 * a)
        assert float(lib.sum(s)) == pytest.approx(a.sum())
        np.testing.assert_allclose(lib.sparse.sum(s, 1).to_dense().numpy(), a.sum(1))


def test_gradient_flows_to_values():
    i = [[0, 1, 2], [1, 2, 0]]
    grads = []
    for lib in (torch, ember):
        v = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        s = _t(lambda: lib.sparse_coo_tensor(i, v, (3, 3)))
        d = lib.arange(6.0).reshape(3, 2)
        lib.sparse.mm(s, d).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0])


def test_sparse_softmax_matches_torch():
    a = np.array([[0, 2.0, 1.0], [1.0, 0, 0], [0, 0, -3.0]], dtype=np.float32)
    t = torch.sparse.softmax(torch.tensor(a).to_sparse(), 1).to_dense()
    e = ember.sparse.softmax(ember.tensor(a).to_sparse(), 1).to_dense()
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5)
    t = torch.sparse.log_softmax(torch.tensor(a).to_sparse(), 0).coalesce().values()
    e = ember.sparse.log_softmax(ember.tensor(a).to_sparse(), 0).coalesce().values()
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5)


def test_unsupported_operations_raise_not_implemented_like_torch():
    for lib in (torch, ember):
        s = lib.eye(3).to_sparse()
        with pytest.raises(NotImplementedError):
            lib.exp(s)
        with pytest.raises(NotImplementedError):
            s.view(9)
    with pytest.raises(TypeError):
        ember.eye(2).to_sparse().numpy()


def _sum_of_two(lib, seed, n_a, n_b, hi, dense_dims, coalesce, alpha):
    rng = np.random.RandomState(seed)
    shape = (hi, 3) + (2,) * dense_dims

    def operand(n, c):
        idx = lib.tensor(np.stack([rng.randint(0, hi, n), rng.randint(0, 3, n)]))
        s = _t(lambda: lib.sparse_coo_tensor(idx, lib.tensor(rng.randn(n, *shape[2:])), shape))
        return s.coalesce() if c else s
    a, b = operand(n_a, coalesce[0]), operand(n_b, coalesce[1])
    s = _t(lambda: a.add(b, alpha=alpha) if alpha != 1 else a + b)
    return (s._indices().tolist(), s._values().numpy(), s.is_coalesced(),
            _t(lambda: s.coalesce().to_dense()).numpy())


@pytest.mark.parametrize("seed", range(12))
def test_sparse_plus_sparse_matches_torch_entry_for_entry(seed):
    """torch merges the two entry lists in their stored order (coalesced or not), summing
    equal indices as it meets them: the same entries, in the same order, the same flag."""
    rng = np.random.RandomState(100 + seed)
    args = (int(rng.randint(1, 40)), int(rng.randint(1, 40)), int(rng.choice([1, 2, 5, 50])),
            seed % 2, (bool(seed % 3 == 0), bool(seed % 4 == 0)), [1, 2.5][seed % 5 == 0])
    want = _sum_of_two(torch, seed, *args)
    got = _sum_of_two(ember, seed, *args)
    assert got[0] == want[0] and got[2] == want[2]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(got[3], want[3], rtol=1e-12)


def test_sparse_plus_sparse_with_deeply_nested_ties_matches_torch():
    # equal descending index lists: each pair of equal heads merges, the rest is a merge of
    # its own (more nested levels than the array merge takes: the rest one by one)
    n = 80
    out = []
    for lib in (torch, ember):
        idx = lib.arange(n - 1, -1, -1).reshape(1, n)
        a = _t(lambda: lib.sparse_coo_tensor(idx, lib.ones(n, dtype=lib.float64), (n,)))
        b = _t(lambda: lib.sparse_coo_tensor(
            lib.cat([idx, idx[:, :5]], 1), lib.arange(n + 5.0, dtype=lib.float64), (n,)))
        s = a + b
        out.append((s._indices().tolist(), s._values().tolist(), s.is_coalesced()))
    assert out[0] == out[1]
