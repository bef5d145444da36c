"""Losses (functional and Modules) against torch: values and gradients for every reduction,
float32 and float64, weights/ignore_index/label smoothing, CTC, legacy arguments, errors."""
import warnings

import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_module, make_pair, same_error, to_lib

RNG = np.random.default_rng(0)
REDS = ["none", "mean", "sum"]
DTYPES = [np.float32, np.float64]
X = RNG.standard_normal((4, 5))
Y = RNG.standard_normal((4, 5))
T = RNG.integers(0, 5, (4,))
W = RNG.random(5)
P = RNG.random((4, 5)) * 0.98 + 0.01
Q = RNG.random((4, 5))
SIGN = np.sign(RNG.standard_normal(4))


def F(lib):
    return lib.nn.functional


def _w(lib, kw):
    return {k: to_lib(lib, v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


POINTWISE = [("l1_loss", {}), ("mse_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
             ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {"delta": 0.7}),
             ("kl_div", {"log_target": True}), ("poisson_nll_loss", {}),
             ("poisson_nll_loss", {"full": True, "log_input": False}), ("kl_div", {})]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("name,kw", POINTWISE, ids=[f"{n}{k}" for n, k in POINTWISE])
def test_pointwise_losses(name, kw, red, dt):
    x, y = X.astype(dt), Y.astype(dt)
    if name == "poisson_nll_loss" and not kw.get("log_input", True):
        x = np.abs(x) + 0.1
    if name == "poisson_nll_loss" or (name == "kl_div" and not kw.get("log_target")):
        y = np.abs(y) * 3
    check_fn(lambda lib, a, b: getattr(F(lib), name)(a, b, reduction=red, **kw), [x, y])


CE_KW = [{}, {"weight": W}, {"label_smoothing": 0.2}, {"weight": W, "label_smoothing": 0.3},
         {"ignore_index": 2}, {"weight": W, "ignore_index": 1}]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("kw", CE_KW, ids=[str(sorted(k)) for k in CE_KW])
def test_cross_entropy_nll(kw, red, dt):
    t = T.copy()
    if "ignore_index" not in kw:
        t[1] = -100
    kw = {k: v.astype(dt) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    x = X.astype(dt)
    check_fn(lambda lib, a, b: F(lib).cross_entropy(a, b, reduction=red, **_w(lib, kw)), [x, t])
    if "label_smoothing" not in kw:
        check_fn(lambda lib, a, b: F(lib).nll_loss(a.log_softmax(1), b, reduction=red,
                                                   **_w(lib, kw)), [x, t])


@pytest.mark.parametrize("red", REDS)
def test_cross_entropy_shapes(red):
    x4 = RNG.standard_normal((2, 5, 3, 2))
    t4 = RNG.integers(0, 5, (2, 3, 2))
    t4[0, 0, 0] = -100
    check_fn(lambda lib, a, b, w: F(lib).cross_entropy(a, b, w, reduction=red,
                                                       label_smoothing=0.1), [x4, t4, W], grad=(0,))
    check_fn(lambda lib, a, b: F(lib).nll_loss(a, b, reduction=red), [x4, t4])
    check_fn(lambda lib, a, b: F(lib).cross_entropy(a, b, reduction=red, label_smoothing=0.1),
             [X[0], np.array(3)])
    # class probabilities
    check_fn(lambda lib, a, b: F(lib).cross_entropy(a, b.softmax(1), reduction=red,
                                                    label_smoothing=0.1), [X, Y])
    check_fn(lambda lib, a, b, w: F(lib).cross_entropy(a, b.softmax(1), w, reduction=red),
             [x4, x4 * 2, W], grad=(0, 1))


def test_cross_entropy_double_backward():
    def f(lib, a, b):
        loss = F(lib).cross_entropy(a, b, label_smoothing=0.1)
        g, = lib.autograd.grad(loss, a, create_graph=True)
        return (g * g).sum()
    check_fn(f, [X, T])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_binary_losses(red, dt):
    p, q, w, x = P.astype(dt), Q.astype(dt), W.astype(dt), X.astype(dt) * 5
    check_fn(lambda lib, a, b, c: F(lib).binary_cross_entropy(a, b, c, reduction=red),
             [p, q, w], grad=(0, 1))
    check_fn(lambda lib, a, b: F(lib).binary_cross_entropy(a, b, reduction=red), [p, q])
    check_fn(lambda lib, a, b, c: F(lib).binary_cross_entropy_with_logits(
        a, b, c, reduction=red, pos_weight=c * 2), [x, q, w], grad=(0, 1))
    check_fn(lambda lib, a, b: F(lib).binary_cross_entropy_with_logits(a, b, reduction=red),
             [x * 100, q])


def test_bce_clamps_log():
    p = np.array([0.0, 1.0, 0.5])
    q = np.array([1.0, 0.0, 0.5])
    check_fn(lambda lib, a, b: F(lib).binary_cross_entropy(a, b, reduction="none"), [p, q],
             grad=False)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_other_losses(red, dt):
    x, y, w = X.astype(dt), Y.astype(dt), W.astype(dt)
    v = Q.astype(dt)
    sign = SIGN.astype(dt)
    check_fn(lambda lib, a, b, c: F(lib).gaussian_nll_loss(a, b, c, full=True, reduction=red),
             [x, y, v])
    check_fn(lambda lib, a, b, c: F(lib).gaussian_nll_loss(a, b, c, reduction=red),
             [x, y, v[:, 0]])
    check_fn(lambda lib, a, b, c: F(lib).cosine_embedding_loss(a, b, c, margin=0.1,
                                                               reduction=red), [x, y, sign])
    check_fn(lambda lib, a, b, c: F(lib).margin_ranking_loss(a, b, c, margin=0.1,
                                                             reduction=red),
             [x[:, 0], y[:, 0], sign])
    check_fn(lambda lib, a, b, c: F(lib).triplet_margin_loss(a, b, c, swap=True, p=1.5,
                                                             reduction=red), [x, y, v])
    check_fn(lambda lib, a, b, c: F(lib).triplet_margin_with_distance_loss(
        a, b, c, swap=True, reduction=red), [x, y, v])
    check_fn(lambda lib, a, b, c: F(lib).triplet_margin_with_distance_loss(
        a, b, c, distance_function=lambda p, q: (p - q).abs().sum(-1), reduction=red),
        [x, y, v])
    check_fn(lambda lib, a, b: F(lib).hinge_embedding_loss(a, b, margin=0.5, reduction=red),
             [x, np.sign(y)])
    check_fn(lambda lib, a, b, c: F(lib).multilabel_soft_margin_loss(a, b, c, reduction=red),
             [x, (y > 0).astype(dt), w])
    check_fn(lambda lib, a, b: F(lib).soft_margin_loss(a, b, reduction=red), [x, np.sign(y)],
             grad=(0,))
    for p in (1, 2):
        check_fn(lambda lib, a, b, c: F(lib).multi_margin_loss(a, b, p=p, margin=0.8, weight=c,
                                                               reduction=red), [x, T, w],
                 grad=(0,))
        check_fn(lambda lib, a, b: F(lib).multi_margin_loss(a, b, p=p, reduction=red),
                 [x[0], T[:1]])
    mt = np.array([[3, 0, -1, 1, 0], [1, 2, 3, -1, 0], [0, 0, 0, 0, 0], [4, 3, 2, 1, 0]])
    check_fn(lambda lib, a, b: F(lib).multilabel_margin_loss(a, b, reduction=red), [x, mt])
    check_fn(lambda lib, a, b: F(lib).multilabel_margin_loss(a, b, reduction=red), [x[0], mt[0]])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("red", REDS)
def test_ctc(red, dt):
    Tn, N, C, S = 12, 3, 6, 4
    lp = RNG.standard_normal((Tn, N, C)).astype(dt)
    tg = RNG.integers(1, C, (N, S))
    il, tl = [12, 10, 7], [4, 2, 3]
    check_fn(lambda lib, a, b: F(lib).ctc_loss(a.log_softmax(2), b, il, tl, reduction=red),
             [lp, tg])
    # directly on a leaf: torch's gradient formula (exp(lp) - occupancy) is matched as is
    check_fn(lambda lib, a, b: F(lib).ctc_loss(a, b, lib.tensor(il), lib.tensor(tl),
                                               reduction=red), [lp, tg])
    cat = np.concatenate([tg[0, :4], tg[1, :2], tg[2, :3]])
    check_fn(lambda lib, a, b: F(lib).ctc_loss(a.log_softmax(2), b, il, tl, blank=C - 1,
                                               reduction=red), [lp, np.where(cat == C - 1, 0, cat)])
    rep = np.array([[1, 1, 2, 2], [3, 3, 0, 0], [1, 2, 0, 0]])
    for zi in (False, True):
        check_fn(lambda lib, a, b: F(lib).ctc_loss(a.log_softmax(2), b, [3, 10, 7], [4, 2, 0],
                                                   reduction=red, zero_infinity=zi), [lp, rep])
    check_fn(lambda lib, a, b: F(lib).ctc_loss(a.log_softmax(1), b, (9,), (3,), reduction=red),
             [lp[:, 0], tg[0, :3]])


LOSS_MODULES = [("L1Loss", (), 2), ("MSELoss", (), 2), ("SmoothL1Loss", (), 2),
                ("HuberLoss", (), 2), ("CrossEntropyLoss", (), "ce"), ("NLLLoss", (), "ce"),
                ("BCELoss", (), "bce"), ("BCEWithLogitsLoss", (), 2), ("KLDivLoss", (), "kl"),
                ("PoissonNLLLoss", (), 2), ("GaussianNLLLoss", (), 3),
                ("CosineEmbeddingLoss", (), "pair"), ("MarginRankingLoss", (0.2,), "rank"),
                ("TripletMarginLoss", (), 3), ("TripletMarginWithDistanceLoss", (), 3),
                ("HingeEmbeddingLoss", (), "sign"), ("MultiLabelSoftMarginLoss", (), "bin"),
                ("MultiMarginLoss", (), "ce"), ("SoftMarginLoss", (), "sign"),
                ("MultiLabelMarginLoss", (), "ml")]


def _module_inputs(kind):
    return {2: [X, Q], 3: [X, Y, Q], "ce": [X, T], "bce": [P, Q], "kl": [X, Q],
            "pair": [X, Y, SIGN], "rank": [X[:, 0], Y[:, 0], SIGN], "sign": [X, np.sign(Y)],
            "bin": [X, (Y > 0).astype(np.float64)],
            "ml": [X, np.array([[3, 0, -1, 1, 0]] * 4)]}[kind]


@pytest.mark.parametrize("name,args,kind", LOSS_MODULES, ids=[m[0] for m in LOSS_MODULES])
def test_loss_modules(name, args, kind):
    for red in REDS:
        kw = {"reduction": red}
        tm, em = make_pair(name, *args, **kw)
        assert repr(em) == repr(tm)
        xs = [a.astype(np.float32) if a.dtype.kind == "f" else a for a in _module_inputs(kind)]
        n_diff = 1 if kind in ("sign", "ce") or name in ("BCEWithLogitsLoss",) else len(xs)
        check_module(tm, em, xs, grad=tuple(range(n_diff)))


def test_weighted_loss_modules():
    w = W.astype(np.float32)
    for name, extra in [("CrossEntropyLoss", {"label_smoothing": 0.1, "ignore_index": 0}),
                        ("NLLLoss", {}), ("MultiMarginLoss", {"p": 2})]:
        tm = getattr(torch.nn, name)(weight=torch.from_numpy(w), **extra)
        em = getattr(ember.nn, name)(weight=ember.from_numpy(w.copy()), **extra)
        assert [n for n, _ in em.named_buffers()] == ["weight"]
        check_module(tm, em, [X.astype(np.float32), T], grad=(0,))
    tm = torch.nn.BCEWithLogitsLoss(pos_weight=torch.from_numpy(w))
    em = ember.nn.BCEWithLogitsLoss(pos_weight=ember.from_numpy(w.copy()))
    assert sorted(n for n, _ in em.named_buffers()) == ["pos_weight"]
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    check_module(tm, em, [X.astype(np.float32), Q.astype(np.float32)], grad=(0,))
    tm, em = make_pair("CTCLoss", blank=1, zero_infinity=True)
    lp = RNG.standard_normal((8, 2, 4)).astype(np.float32)
    check_module(tm, em, [lp, np.array([[2, 3], [3, 0]]), np.array([8, 6]), np.array([2, 1])])


def test_legacy_reduction_args():
    for sa, rd in [(False, None), (None, False), (True, True)]:
        check_fn(lambda lib, a, b: F(lib).mse_loss(a, b, size_average=sa, reduce=rd), [X, Y])
        check_fn(lambda lib, a, b: F(lib).cross_entropy(a, b, size_average=sa, reduce=rd), [X, T])
        assert ember.nn.L1Loss(size_average=sa, reduce=rd).reduction == \
            torch.nn.L1Loss(size_average=sa, reduce=rd).reduction
    with pytest.warns(UserWarning, match="size_average and reduce"):
        ember.nn.MSELoss(size_average=False)


def test_kl_div_batchmean_and_warning():
    check_fn(lambda lib, a, b: F(lib).kl_div(a, b, reduction="batchmean"), [X, Q])
    with pytest.warns(UserWarning, match="batchmean"):
        F(ember).kl_div(ember.zeros(2), ember.ones(2))


def test_mse_target_size_warning_and_broadcast():
    with pytest.warns(UserWarning, match="different to the input size"):
        ember.nn.functional.mse_loss(ember.zeros(3, 1), ember.zeros(3))
    check_fn(lambda lib, a, b: F(lib).mse_loss(a, b), [X, Y[0]])
    same_error(lambda lib, a, b: F(lib).mse_loss(a, b), X, Y[:3])


ERRORS = [
    (lambda lib, a, b: F(lib).cross_entropy(a, b), [X, np.array([0, 5, 1, 2])]),
    (lambda lib, a, b: F(lib).nll_loss(a, b), [X, np.array([0, -3, 1, 2])]),
    (lambda lib, a, b: F(lib).cross_entropy(a, b), [X, np.array([0, 1, 2])]),
    (lambda lib, a, b: F(lib).cross_entropy(a, b), [X, T.astype(np.float32)]),
    (lambda lib, a, b: F(lib).cross_entropy(a, b, reduction="avg"), [X, T]),
    (lambda lib, a, b: F(lib).cross_entropy(a, b, weight=lib.ones(3)), [X, T]),
    (lambda lib, a, b: F(lib).cross_entropy(a, b), [X, X.astype(np.int64)]),
    (lambda lib, a, b: F(lib).cross_entropy(a, b, label_smoothing=1.5), [X, T]),
    (lambda lib, a, b: F(lib).nll_loss(a, b), [X[:, :, None], T]),
    (lambda lib, a, b: F(lib).binary_cross_entropy(a, b), [P, Q[:, :1]]),
    (lambda lib, a, b: F(lib).binary_cross_entropy(a, b), [X, Q]),
    (lambda lib, a, b: F(lib).binary_cross_entropy_with_logits(a, b), [X, Q[:1]]),
    (lambda lib, a, b: F(lib).mse_loss(a, b, reduction="bad"), [X, Y]),
    (lambda lib, a, b: F(lib).multi_margin_loss(a, b, p=3), [X, T]),
    (lambda lib, a, b, c: F(lib).gaussian_nll_loss(a, b, c), [X, Y, -Q]),
    (lambda lib, a, b, c: F(lib).gaussian_nll_loss(a, b, c), [X, Y, Q[:2]]),
    (lambda lib, a, b: F(lib).ctc_loss(a, b, [20, 3], [2, 2]),
     [np.zeros((5, 2, 3)), np.ones((2, 2), np.int64)]),
    (lambda lib, a, b: F(lib).kl_div(a, b, reduction="x"), [X, Y]),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, args = ERRORS[i]
    same_error(fn, *args)


def test_target_out_of_bounds_message():
    with pytest.raises(IndexError, match="Target 5 is out of bounds."):
        F(ember).cross_entropy(ember.zeros(2, 3), ember.tensor([0, 5]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F(ember).nll_loss(ember.zeros(2, 3, 2), ember.tensor([[0, 1], [7, 2]]))
