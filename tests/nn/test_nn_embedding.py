"""Embedding, EmbeddingBag, one_hot and the distance functions/Modules against torch."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_module, make_pair, np_of, same_error, to_lib

RNG = np.random.default_rng(2)
W = RNG.standard_normal((10, 4))
IDX = RNG.integers(0, 10, (3, 5))
IDX[0, 0] = IDX[1, 1] = IDX[2, 2] = 2
FLAT = RNG.integers(0, 10, (9,))
FLAT[3] = 2
OFFS = np.array([0, 2, 2, 6])


def F(lib):
    return lib.nn.functional


EMB_KW = [{}, {"padding_idx": 2}, {"padding_idx": -8}, {"scale_grad_by_freq": True},
          {"padding_idx": 2, "scale_grad_by_freq": True}]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kw", EMB_KW, ids=[str(k) for k in EMB_KW])
def test_embedding(kw, dt):
    check_fn(lambda lib, i, w: F(lib).embedding(i, w, **kw), [IDX, W.astype(dt)])
    check_fn(lambda lib, i, w: F(lib).embedding(i, w, **kw), [IDX[0].astype(np.int32),
                                                              W.astype(dt)])
    check_fn(lambda lib, i, w: F(lib).embedding(i, w, **kw), [np.array(3), W.astype(dt)])


@pytest.mark.parametrize("kw", [{"max_norm": 1.0}, {"max_norm": 1.5, "norm_type": 1.0},
                                {"max_norm": 0.5, "norm_type": float("inf")}])
def test_embedding_max_norm_renormalises_in_place(kw):
    res = {}
    for lib in (torch, ember):
        w = to_lib(lib, W.copy())
        out = F(lib).embedding(to_lib(lib, IDX), w, **kw)
        res[lib.__name__] = (np_of(w), np_of(out))
    np.testing.assert_allclose(res["ember"][0], res["torch"][0], rtol=1e-7)
    np.testing.assert_allclose(res["ember"][1], res["torch"][1], rtol=1e-7)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 2])
def test_embedding_bag(mode, pad):
    kw = {"mode": mode, "padding_idx": pad}
    check_fn(lambda lib, i, w, o: F(lib).embedding_bag(i, w, o, **kw), [FLAT, W, OFFS])
    check_fn(lambda lib, i, w: F(lib).embedding_bag(i, w, **kw), [IDX, W])
    check_fn(lambda lib, i, w, o: F(lib).embedding_bag(i, w, o, include_last_offset=True, **kw),
             [FLAT, W, np.array([0, 2, 2, 6, 9])])


def test_embedding_bag_per_sample_weights():
    psw = RNG.random(9)
    check_fn(lambda lib, i, w, o, p: F(lib).embedding_bag(i, w, o, mode="sum",
                                                          per_sample_weights=p),
             [FLAT, W, OFFS, psw])
    check_fn(lambda lib, i, w, p: F(lib).embedding_bag(i, w, mode="sum", per_sample_weights=p),
             [IDX, W, RNG.random(IDX.shape)])


def test_one_hot():
    check_fn(lambda lib, i: F(lib).one_hot(i), [IDX], grad=False)
    check_fn(lambda lib, i: F(lib).one_hot(i, 12), [IDX], grad=False)
    check_fn(lambda lib, i: F(lib).one_hot(i, 3), [np.zeros((0,), np.int64)], grad=False)
    for args in ([np.array([1, 5])], [np.array([-1, 2])], [np.zeros(0, np.int64)],
                 [np.array([1.0])]):
        kw = {"num_classes": 3} if args[0].size and args[0].max() == 5 else {}
        same_error(lambda lib, i: F(lib).one_hot(i, **kw), *args)


def test_embedding_modules():
    for kw in [{}, {"padding_idx": 1}, {"max_norm": 2.0, "scale_grad_by_freq": True}]:
        tm, em = make_pair("Embedding", 10, 4, **kw)
        assert repr(em) == repr(tm)
        check_module(tm, em, [IDX])
    en = ember.nn.Embedding(6, 3, padding_idx=-1)
    assert en.padding_idx == 5
    np.testing.assert_array_equal(en.weight.detach().numpy()[5], np.zeros(3, np.float32))
    for kw in [{}, {"mode": "max"}, {"mode": "sum", "padding_idx": 2},
               {"include_last_offset": True}]:
        tm, em = make_pair("EmbeddingBag", 10, 4, **kw)
        assert repr(em) == repr(tm)
        offs = np.array([0, 2, 2, 6, 9]) if kw.get("include_last_offset") else OFFS
        check_module(tm, em, [FLAT, offs])


def test_from_pretrained():
    w = W.astype(np.float32)
    for freeze in (True, False):
        tm = torch.nn.Embedding.from_pretrained(torch.from_numpy(w), freeze=freeze,
                                                padding_idx=2)
        em = ember.nn.Embedding.from_pretrained(ember.from_numpy(w.copy()), freeze=freeze,
                                                padding_idx=2)
        assert em.weight.requires_grad == tm.weight.requires_grad == (not freeze)
        assert repr(em) == repr(tm)
        check_module(tm, em, [IDX], param_grads=not freeze)
        tb = torch.nn.EmbeddingBag.from_pretrained(torch.from_numpy(w), freeze=freeze)
        eb = ember.nn.EmbeddingBag.from_pretrained(ember.from_numpy(w.copy()), freeze=freeze)
        assert eb.weight.requires_grad == tb.weight.requires_grad
        check_module(tb, eb, [IDX], param_grads=not freeze)


EMB_ERRORS = [
    (lambda lib, i, w: F(lib).embedding(i, w), [np.array([1, 10]), W]),
    (lambda lib, i, w: F(lib).embedding(i, w), [np.array([1.0, 2.0]), W]),
    (lambda lib, i, w, o: F(lib).embedding_bag(i, w, o, mode="mean", per_sample_weights=lib.ones(9)),
     [FLAT, W, OFFS]),
    (lambda lib, i, w: F(lib).embedding_bag(i, w), [FLAT, W]),
    (lambda lib, i, w, o: F(lib).embedding_bag(i, w, o), [IDX, W, OFFS]),
    (lambda lib, i, w, o: F(lib).embedding_bag(i, w, o), [FLAT, W, np.array([1, 3])]),
    (lambda lib, i, w, o: F(lib).embedding_bag(i, w, o, mode="avg"), [FLAT, W, OFFS]),
]


@pytest.mark.parametrize("i", range(len(EMB_ERRORS)))
def test_embedding_errors(i):
    fn, args = EMB_ERRORS[i]
    same_error(fn, *args)


def test_embedding_out_of_range_message():
    with pytest.raises(IndexError, match="index out of range in self"):
        ember.nn.Embedding(3, 2)(ember.tensor([3]))


# ---- distances --------------------------------------------------------------------------
A = RNG.standard_normal((4, 5))
B = RNG.standard_normal((4, 5))


@pytest.mark.parametrize("p", [1, 2, 3.0, float("inf")])
def test_pairwise_distance_pdist_normalize(p):
    check_fn(lambda lib, x, y: F(lib).pairwise_distance(x, y, p), [A, B])
    check_fn(lambda lib, x, y: F(lib).pairwise_distance(x, y, p, keepdim=True), [A[0], B])
    check_fn(lambda lib, x: F(lib).pdist(x, p), [A])
    check_fn(lambda lib, x: F(lib).normalize(x, p, dim=0), [A])
    check_fn(lambda lib, x: F(lib).normalize(x, p, dim=-1), [A.astype(np.float32)])


def test_cosine_similarity():
    check_fn(lambda lib, x, y: F(lib).cosine_similarity(x, y), [A, B])
    check_fn(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=-1), [A[:1], B])
    check_fn(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=0, eps=1e-3),
             [A.astype(np.float32), B.astype(np.float32)])


def test_distance_modules():
    for name, args in [("PairwiseDistance", ()), ("PairwiseDistance", (1.0, 1e-3, True)),
                       ("CosineSimilarity", ()), ("CosineSimilarity", (0, 1e-6))]:
        tm, em = make_pair(name, *args)
        assert repr(em) == repr(tm)
        check_module(tm, em, [A.astype(np.float32), B.astype(np.float32)])
    same_error(lambda lib, x: F(lib).pdist(x), A[0])
