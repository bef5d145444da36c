"""Embedding(sparse=True) against torch: the weight's gradient is a sparse COO tensor
(summed sparsely across backward calls, made dense by a dense term), and training loops
with the optimizers that take sparse gradients follow torch's trajectory."""
import numpy as np
import pytest
import torch

import ember

W0 = np.random.default_rng(3).standard_normal((7, 4))
IDX = [[0, 2, 2], [5, 0, 1]]


def _grad(lib, calls, padding_idx=None):
    w = lib.tensor(W0, requires_grad=True)
    idx = lib.tensor(IDX)
    for sparse in calls:
        out = lib.nn.functional.embedding(idx, w, padding_idx=padding_idx, sparse=sparse)
        (out * lib.arange(4.0, dtype=lib.float64)).sum().backward()
    return w.grad


@pytest.mark.parametrize("calls", [(True,), (True, True), (True, False), (False, True)])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_grad_layout_and_values_like_torch(calls, padding_idx):
    e, t = _grad(ember, calls, padding_idx), _grad(torch, calls, padding_idx)
    assert str(e.layout).split(".")[1] == str(t.layout).split(".")[1]
    assert e.is_sparse == t.is_sparse
    np.testing.assert_allclose(e.to_dense().numpy(), t.to_dense().numpy(), rtol=1e-12)


def test_first_sparse_grad_keeps_torch_indices():
    e, t = _grad(ember, (True,), 2), _grad(torch, (True,), 2)
    assert e._indices().tolist() == t._indices().tolist() == [[0, 5, 0, 1]]
    np.testing.assert_allclose(e._values().numpy(), t._values().numpy())


def _layout(g):
    return g.is_coalesced(), g._nnz(), g._indices().tolist(), g._values().tolist()


@pytest.mark.parametrize("loss", ("sum", "weighted"))
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_grads_summed_across_backward_calls_keep_torch_layout(loss, padding_idx):
    """Three backward calls: torch adds each sparse gradient into .grad without coalescing.
    The gradient of a sum is expanded (non-contiguous values) and torch concatenates the
    entries; a weighted loss's is contiguous and torch merges the two entry lists in one
    pass (equal indices met side by side summed, the result still uncoalesced)."""
    out = []
    for lib in (torch, ember):
        w = lib.tensor(W0, requires_grad=True)
        seen = []
        for idx in ([[0, 2, 2], [5, 0, 1]], [[3, 0]], [[0, 2, 2], [5, 0, 1]]):
            y = lib.nn.functional.embedding(lib.tensor(idx), w, padding_idx=padding_idx,
                                            sparse=True)
            y = y.sum() if loss == "sum" else (y * lib.arange(4.0, dtype=lib.float64)).sum()
            y.backward()
            seen.append(_layout(w.grad))
        out.append(seen)
    assert out[1] == out[0]


@pytest.mark.parametrize("ca", (False, True))
@pytest.mark.parametrize("cb", (False, True))
@pytest.mark.parametrize("alpha", (1, 2))
@pytest.mark.parametrize("expanded", (False, True))
def test_sparse_add_layout_like_torch(ca, cb, alpha, expanded):
    """sparse + sparse: torch's one-pass merge of the entry lists in their stored order
    (coalesced only when both operands are), or concatenation when values are expanded."""
    out = []
    for lib in (torch, ember):
        def sp(i, v):
            vals = lib.tensor(v, dtype=lib.float64)[:, None]
            vals = vals.expand(-1, 2) if expanded else vals.repeat(1, 2)
            return lib.sparse_coo_tensor(lib.tensor([i]), vals, (6, 2), check_invariants=False)
        a, b = sp([4, 1, 4, 0], [1., 2., 3., 4.]), sp([1, 0, 4], [10., 20., 30.])
        a = a.coalesce() if ca else a
        b = b.coalesce() if cb else b
        out.append(_layout(lib.add(a, b, alpha=alpha)))
    assert out[1] == out[0]


def test_all_rows_padding_gives_an_empty_sparse_grad():
    for lib in (torch, ember):
        w = lib.tensor(W0, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor([[2, 2]]), w, padding_idx=2,
                                    sparse=True).sum().backward()
        assert w.grad.is_sparse and w.grad._nnz() == 0
        assert tuple(w.grad._values().shape) == (0, 4)


def test_scale_grad_by_freq_refused_like_torch():
    for lib in (torch, ember):
        w = lib.tensor(W0, requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor(IDX), w, scale_grad_by_freq=True,
                                          sparse=True)
        with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
            out.sum().backward()


def _train(lib, opt_name, steps=4, **kw):
    lib.manual_seed(0)
    emb = lib.nn.Embedding(7, 4, sparse=True)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(W0, dtype=lib.float32))
    opt = getattr(lib.optim, opt_name)(emb.parameters(), **kw)
    batches = [[[0, 2, 2], [5, 0, 1]], [[3, 3, 6]], [[1, 0]], [[2, 4, 5, 6]]]
    for k in range(steps):
        opt.zero_grad()
        out = emb(lib.tensor(batches[k % len(batches)]))
        loss = (out ** 2).sum() + out.sum()
        loss.backward()
        assert emb.weight.grad.is_sparse
        opt.step()
    return emb.weight.detach().numpy()


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")  # torch's Adagrad, on its side
@pytest.mark.parametrize("opt_name, kw", [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.05,
                                                                             momentum=0.9)),
                                          ("Adagrad", dict(lr=0.1)),
                                          ("SparseAdam", dict(lr=0.05))])
def test_training_loop_like_torch(opt_name, kw):
    np.testing.assert_allclose(_train(ember, opt_name, **kw), _train(torch, opt_name, **kw),
                               rtol=1e-5, atol=1e-6)


def test_adam_refuses_sparse_grads_like_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="does not support sparse gradients"):
            _train(lib, "Adam", steps=1)
