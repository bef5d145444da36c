"""Undefined gradients of multi-output nodes, as torch passes them.

An output of a multi-output node that received no gradient reaches the node's backward
rule as None (torch's undefined tensor), never as materialised zeros: the rule leaves
that output's terms out by a test of presence, never of values, so eager, traced and
compiled backward compute the same thing, and formulas that divide by gaps between
singular values or eigenvalues stay finite when only the values are used (repeated
values, as at the identity).  Every case is compared with torch.
"""
import numpy as np
import pytest
import torch

import ember
from ember._core.dispatch import apply
from ember.ops.nn.batch_norm import BATCH_NORM_NO_STATS
from ember.ops.nn.normalization import normalize_stats

pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def _rng(seed):
    return np.random.default_rng(seed)


def _grad(lib, f, a):
    x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
    g, = lib.autograd.grad(f(lib, x), x, allow_unused=True)
    return None if g is None else g.detach().numpy()


def _check(f, a, atol=1e-9):
    t, e = _grad(torch, f, a), _grad(ember, f, a)
    if t is None:
        assert e is None, "torch's gradient is undefined, ember's is not"
        return
    assert e is not None
    np.testing.assert_allclose(e, t, atol=atol, rtol=1e-7, equal_nan=True)
    return e


EYE = np.eye(3)
SQ = _rng(0).standard_normal((4, 4))
TALL = _rng(1).standard_normal((5, 3))
WIDE = _rng(2).standard_normal((3, 5))
W4 = _rng(3).uniform(0.5, 1.5, (5, 5))


def _w(lib, x):  # a fixed weighting of the right shape (a gauge-invariant loss of U/V)
    return lib.tensor(W4[:x.shape[-2], :x.shape[-1]], dtype=lib.float64)


CASES = {
    # only S: repeated singular values (the identity) must stay finite, as in torch
    "svd-S-identity": (lambda L, a: L.linalg.svd(a)[1].sum(), EYE),
    "svd-S-full_matrices": (lambda L, a: (L.linalg.svd(a, full_matrices=True)[1] ** 2).sum(),
                            np.eye(3, 4)),
    "svd-S-tall": (lambda L, a: L.linalg.svd(a, full_matrices=False)[1].sum(), TALL),
    "svdvals-identity": (lambda L, a: L.linalg.svdvals(a).sum(), EYE),
    # U or V alone (the other factor's gradient undefined); squared entries are sign-invariant
    "svd-U-tall": (lambda L, a: (L.linalg.svd(a, full_matrices=False)[0] ** 2 *
                                 _w(L, L.linalg.svd(a, full_matrices=False)[0])).sum(), TALL),
    "svd-Vh-wide": (lambda L, a: (L.linalg.svd(a, full_matrices=False)[2] ** 2 *
                                  _w(L, L.linalg.svd(a, full_matrices=False)[2])).sum(), WIDE),
    "svd-U-S": (lambda L, a: (lambda r: (r[0] ** 2 * _w(L, r[0])).sum() + r[1].sum())(
        L.linalg.svd(a, full_matrices=False)), SQ),
    "eigh-values-repeated": (lambda L, a: (L.linalg.eigh(a)[0] ** 2).sum(), np.diag([1.0, 1, 2])),
    "eigh-vectors": (lambda L, a: (L.linalg.eigh(a)[1] ** 2 * _w(L, a)).sum(),
                     np.diag([1.0, 2, 3, 4]) + 0.1),
    "eig-values": (lambda L, a: L.linalg.eig(a)[0].real.sum(), SQ),
    "qr-R-tall": (lambda L, a: L.linalg.qr(a)[1].sum(), TALL),
    "qr-Q-tall": (lambda L, a: L.linalg.qr(a)[0].sum(), TALL),
    "qr-Q-wide": (lambda L, a: L.linalg.qr(a)[0].sum(), WIDE),
    "qr-R-wide": (lambda L, a: L.linalg.qr(a)[1].sum(), WIDE),
    "slogdet-logabsdet": (lambda L, a: L.linalg.slogdet(a)[1], SQ),
    "slogdet-sign-real": (lambda L, a: L.linalg.slogdet(a)[0] * 1.0, SQ),
    "lstsq-solution": (lambda L, a: L.linalg.lstsq(a, L.ones(5, 2, dtype=L.float64))
                       .solution.sum(), TALL),
    "topk-values": (lambda L, a: (L.topk(a.flatten(), 3)[0] * L.arange(3.0, dtype=L.float64))
                    .sum(), SQ),
    "sort-values": (lambda L, a: (L.sort(a, 1)[0] * _w(L, a)).sum(), SQ),
    "max-dim-values": (lambda L, a: L.max(a, 0)[0].sum(), SQ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_gradient_with_undefined_outputs_like_torch(name):
    f, a = CASES[name]
    _check(f, a)


def _stats_torch(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    return mean, ((x - mean).pow(2).mean(dims, keepdim=True) + eps).rsqrt()


@pytest.mark.parametrize("use", ["mean", "rstd", "both"])
def test_normalization_statistics_alone_like_torch_formula(use):
    """ember's fused normalization ops return their statistics as differentiable outputs
    (torch's native ops do not): with the normalized output unused, its gradient is None
    and the statistics' gradients equal those of the plain formula."""
    a = _rng(4).standard_normal((3, 4, 2))
    w = [1.0 if use != "rstd" else 0.0, 1.0 if use != "mean" else 0.0]
    t = torch.tensor(a, requires_grad=True)
    m, r = _stats_torch(t, (0, 2), 1e-5)
    (w[0] * m.sum() + w[1] * r.sum()).backward()
    pick = [i for i, k in enumerate(w) if k]
    e = ember.tensor(a, requires_grad=True)
    _, em, er = normalize_stats(e, (0, 2), 1e-5)
    sum(([em, er][i].sum() for i in pick), ember.tensor(0.0, dtype=ember.float64)).backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-12)
    # batch norm (training) over (N, C, L): the same statistics per channel
    b = ember.tensor(a, requires_grad=True)
    _, bm, br = apply(BATCH_NORM_NO_STATS, (b, None, None),
                      {"training": True, "momentum": 0.1, "eps": 1e-5})
    sum(([bm, br][i].sum() for i in pick), ember.tensor(0.0, dtype=ember.float64)).backward()
    np.testing.assert_allclose(b.grad.numpy(), t.grad.numpy(), atol=1e-12)


def test_svd_only_singular_values_at_identity_is_finite_and_exact():
    g = _check(CASES["svd-S-identity"][0], EYE)
    np.testing.assert_array_equal(g, EYE)


def test_node_hooks_see_none_for_unused_outputs():
    seen = {}
    for lib in (torch, ember):
        x = lib.tensor(SQ, dtype=lib.float64, requires_grad=True)
        u, s, vh = lib.linalg.svd(x)
        got = []
        s.grad_fn.register_prehook(lambda go: got.append([g is None for g in go]))
        s.sum().backward()
        seen[lib.__name__] = got
    assert seen["ember"] == seen["torch"] == [[True, False, True]]


# (autograd.Function's set_materialize_grads: tests/autograd/test_function_class_attributes.py)


# ---- recurrent layers: only the output sequence (h_n unused) or only the last state ----------

def _rnn_grads(lib, mode, use):
    lib.manual_seed(0)
    m = getattr(lib.nn, mode)(3, 4, num_layers=2).double()
    sd = {k: lib.tensor(v, dtype=lib.float64) for k, v in _RNN_WEIGHTS[mode].items()}
    m.load_state_dict(sd)
    x = lib.tensor(_rng(7).standard_normal((5, 2, 3)), requires_grad=True)
    out, last = m(x)
    if use == "output":
        loss = (out * lib.tensor(_rng(8).uniform(size=out.shape))).sum()
    elif use == "h_n":
        loss = (last[0] if mode == "LSTM" else last).sum()
    else:  # c_n alone: the layer's hidden-state sequence receives no gradient
        loss = last[1].pow(2).sum()
    params = [x] + list(m.parameters())
    return [g.detach().numpy() for g in lib.autograd.grad(loss, params)]


def _weights(mode):
    torch.manual_seed(0)
    m = getattr(torch.nn, mode)(3, 4, num_layers=2).double()
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


_RNN_WEIGHTS = {"LSTM": _weights("LSTM"), "GRU": _weights("GRU")}


@pytest.mark.parametrize("mode,use", [("LSTM", "output"), ("LSTM", "h_n"), ("LSTM", "c_n"),
                                      ("GRU", "output"), ("GRU", "h_n")])
def test_rnn_with_unused_outputs_like_torch(mode, use):
    for e, t in zip(_rnn_grads(ember, mode, use), _rnn_grads(torch, mode, use)):
        np.testing.assert_allclose(e, t, atol=1e-10, rtol=1e-8)


def test_lstm_cell_with_only_c_like_torch():
    res = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        cell = lib.nn.LSTMCell(3, 4).double()
        cell.load_state_dict({k: lib.tensor(v) for k, v in _CELL.items()})
        x = lib.tensor(_rng(9).standard_normal((2, 3)), requires_grad=True)
        h, c = cell(x)
        res.append(lib.autograd.grad(c.sum(), [x] + list(cell.parameters())))
    for t, e in zip(*res):
        np.testing.assert_allclose(e.numpy(), t.numpy(), atol=1e-12)


torch.manual_seed(1)
_CELL = {k: v.detach().numpy().copy() for k, v in torch.nn.LSTMCell(3, 4).double()
         .state_dict().items()}


# ---- forward-over-reverse at degenerate points ----------------------------------------------

def _svals(lib):
    return lambda a: lib.linalg.svd(a)[1].pow(2).sum()


def _det(lib):
    return lambda a: lib.linalg.det(a)


SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])  # rank 2
RANK1 = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 3.0])


@pytest.mark.parametrize("make,a", [(_svals, EYE), (_svals, np.diag([2.0, 2.0, 1.0])),
                                    (_det, SINGULAR), (_det, RANK1)],
                         ids=["svd-S-identity", "svd-S-repeated", "det-rank2", "det-rank1"])
def test_forward_over_reverse_like_torch(make, a):
    v = _rng(11).standard_normal(a.shape)
    res = []
    for lib in (torch, ember):
        x, t = lib.tensor(a), lib.tensor(v)
        f = make(lib)
        _, jvp_of_grad = lib.func.jvp(lib.func.grad(f), (x,), (t,))
        hess = lib.func.jacfwd(lib.func.jacrev(f))(x)
        res.append((jvp_of_grad.numpy(), hess.numpy()))
    (tj, th), (ej, eh) = res
    np.testing.assert_allclose(ej, tj, atol=1e-9)
    np.testing.assert_allclose(eh, th, atol=1e-9)


def test_det_hessian_at_identity_is_exact():
    """torch's is NaN there (its double backward of det runs through an SVD with repeated
    singular values); ember's is the exact d2 det / dA_ij dA_kl = d_ij d_kl - d_il d_kj."""
    d = np.eye(3)
    want = np.einsum("ij,kl->ijkl", d, d) - np.einsum("il,kj->ijkl", d, d)
    x = ember.tensor(EYE)
    np.testing.assert_allclose(ember.func.jacfwd(ember.func.jacrev(_det(ember)))(x).numpy(),
                               want, atol=1e-12)
    t = torch.func.jacfwd(torch.func.jacrev(_det(torch)))(torch.tensor(EYE))
    assert torch.isnan(t).all()  # (the reason this is not a comparison with torch)


# ---- traced and compiled backward compute what eager does -----------------------------------

def _svd_s_loss(lib):
    def f(a):
        return lib.linalg.svd(a)[1].pow(2).sum() + lib.linalg.eigh(a)[0].sum()
    return f


def test_compiled_backward_with_undefined_outputs_matches_eager_and_torch():
    t = torch.tensor(EYE, requires_grad=True)
    _svd_s_loss(torch)(t).backward()
    x = ember.tensor(EYE, requires_grad=True)
    ember.compile(_svd_s_loss(ember), backend="eager")(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-12)
    y = ember.tensor(EYE, requires_grad=True)
    _svd_s_loss(ember)(y).backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.grad.numpy())


@pytest.mark.parametrize("name", ["svd-S-tall", "svd-U-tall", "eigh-values-repeated",
                                  "qr-R-wide", "qr-Q-tall", "slogdet-logabsdet", "topk-values"])
def test_compiled_backward_like_eager(name):
    f, a = CASES[name]
    x = ember.tensor(a, requires_grad=True)
    g, = ember.autograd.grad(ember.compile(lambda x: f(ember, x), backend="eager")(x), x)
    np.testing.assert_allclose(g.numpy(), _grad(ember, f, a), atol=1e-12)


def test_compiled_rnn_backward_with_unused_state_matches_eager():
    def run(compiled):
        ember.manual_seed(0)
        m = ember.nn.LSTM(3, 4).double()
        m.load_state_dict({k: ember.tensor(v) for k, v in _LSTM1.items()})
        x = ember.tensor(_rng(12).standard_normal((5, 2, 3)), requires_grad=True)

        def f(x):
            return m(x)[0].pow(2).sum()   # h_n and c_n unused
        (ember.compile(f, backend="eager") if compiled else f)(x).backward()
        return [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    tm = torch.nn.LSTM(3, 4).double()
    tm.load_state_dict({k: torch.tensor(v) for k, v in _LSTM1.items()})
    tx = torch.tensor(_rng(12).standard_normal((5, 2, 3)), requires_grad=True)
    tm(tx)[0].pow(2).sum().backward()
    want = [tx.grad.numpy()] + [p.grad.numpy() for p in tm.parameters()]
    for c, e, t in zip(run(True), run(False), want):
        np.testing.assert_allclose(c, e, atol=1e-12)
        np.testing.assert_allclose(e, t, atol=1e-10)


torch.manual_seed(2)
_LSTM1 = {k: v.detach().numpy().copy() for k, v in torch.nn.LSTM(3, 4).double()
          .state_dict().items()}


@pytest.mark.parametrize("mode,use", [("LSTM", "output"), ("LSTM", "c_n"), ("GRU", "output")])
def test_vmap_of_grad_through_rnn_with_unused_outputs_equals_a_loop(mode, use):
    """The layer backward's vmap rule (shared and per-example weights) with an output
    gradient that is None."""
    ember.manual_seed(0)
    m = getattr(ember.nn, mode)(3, 4).double()
    params = {k: v.detach() for k, v in m.named_parameters()}
    x = ember.tensor(_rng(13).standard_normal((4, 5, 1, 3)))

    def f(p, xi):
        out, last = ember.func.functional_call(m, p, (xi,))
        return (out if use == "output" else last[1]).pow(2).sum()
    loop = [ember.func.grad(f)(params, x[i]) for i in range(4)]
    per_example = {k: v.expand(4, *v.shape).clone() for k, v in params.items()}
    for g in (ember.func.vmap(ember.func.grad(f), in_dims=(None, 0))(params, x),
              ember.func.vmap(ember.func.grad(f))(per_example, x)):
        for k in params:
            np.testing.assert_allclose(g[k].numpy(), np.stack([l[k].numpy() for l in loop]),
                                       atol=1e-10)
