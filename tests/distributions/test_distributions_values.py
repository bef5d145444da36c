"""Every distribution against torch on the same parameters: shapes, moments, entropy,
log_prob (values and parameter gradients), cdf/icdf, expand, enumerate_support, and the
statistics and reparameterized gradients of ember's own samples."""
import warnings

import numpy as np
import pytest
import torch

import ember
from _dist_specs import SPECS, build

IDS = [s[0] for s in SPECS]
STATS = [s for s in SPECS if "stats" in s[3]]


def npy(x):
    if isinstance(x, ember.Tensor):
        return x.detach().numpy()
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x)


def close(a, b, rtol=1e-6, atol=1e-8):
    a, b = npy(a), npy(b)
    if np.float32 in (a.dtype, b.dtype):
        rtol, atol = max(rtol, 1e-4), max(atol, 1e-5)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _both(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        de, pe = build(ember, spec)
        dt, pt = build(torch, spec)
    return de, pe, dt, pt


def _try(fn):
    """fn() or the type of the exception it raised."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the types are compared between libraries
        return type(e)


def _torch_value(dt, n=4):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dt.sample((n,))


def _same(e, t, **tol):
    if isinstance(t, type):
        assert isinstance(e, type) and e.__name__ == t.__name__, (e, t)
    else:
        assert not isinstance(e, type), f"ember raised {e} where torch returned a value"
        assert tuple(e.shape) == tuple(t.shape)
        close(e, t, **tol)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_shapes_moments_entropy(spec):
    de, _, dt, _ = _both(spec)
    assert tuple(de.batch_shape) == tuple(dt.batch_shape)
    assert tuple(de.event_shape) == tuple(dt.event_shape)
    assert de.has_rsample == dt.has_rsample
    assert de.has_enumerate_support == dt.has_enumerate_support
    for name in ("mean", "variance", "stddev", "mode"):
        _same(_try(lambda: getattr(de, name)), _try(lambda: getattr(dt, name)), rtol=1e-6)
    _same(_try(de.entropy), _try(dt.entropy), rtol=1e-6)
    _same(_try(de.perplexity), _try(dt.perplexity), rtol=1e-6)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_log_prob_and_gradients(spec):
    de, pe, dt, pt = _both(spec)
    vt = _torch_value(dt)
    ve = ember.tensor(vt.numpy())
    le, lt = de.log_prob(ve), dt.log_prob(vt)
    assert tuple(le.shape) == tuple(lt.shape)
    close(le, lt, rtol=1e-6, atol=1e-8)
    assert le.requires_grad == lt.requires_grad
    if not lt.requires_grad:
        return
    le.sum().backward()
    lt.sum().backward()
    for k, v in vars(pt).items():
        if isinstance(v, torch.Tensor) and v.requires_grad:
            ge = getattr(pe, k).grad
            assert ge is not None, f"no gradient for {k}"
            close(ge, v.grad, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_entropy_gradients(spec):
    de, pe, dt, pt = _both(spec)
    ht = _try(dt.entropy)
    if isinstance(ht, type):
        return  # torch has no entropy here; the values test checks ember raises the same
    he = de.entropy()
    assert he.requires_grad == ht.requires_grad
    if not ht.requires_grad:
        return
    he.sum().backward()
    ht.sum().backward()
    for k, v in vars(pt).items():
        if isinstance(v, torch.Tensor) and v.requires_grad and v.grad is not None:
            close(getattr(pe, k).grad, v.grad, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_cdf_icdf(spec):
    de, _, dt, _ = _both(spec)
    vt = _torch_value(dt)
    ve = ember.tensor(vt.numpy())
    _same(_try(lambda: de.cdf(ve)), _try(lambda: dt.cdf(vt)), rtol=1e-6, atol=1e-10)
    shape = tuple(dt.batch_shape) + tuple(dt.event_shape)
    u = np.linspace(0.05, 0.95, 4).reshape((4,) + (1,) * len(shape)) * np.ones(shape)
    _same(_try(lambda: de.icdf(ember.tensor(u))), _try(lambda: dt.icdf(torch.tensor(u))),
          rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_expand(spec):
    de, _, dt, _ = _both(spec)
    new = (2,) + tuple(dt.batch_shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ee, et = de.expand(new), dt.expand(new)
    assert tuple(ee.batch_shape) == tuple(et.batch_shape) == new
    assert tuple(ee.event_shape) == tuple(et.event_shape)
    assert type(ee) is type(de)
    vt = _torch_value(dt, 1)
    close(ee.log_prob(ember.tensor(vt.numpy())), et.log_prob(vt), rtol=1e-6)
    assert tuple(ee.sample((3,)).shape) == (3,) + new + tuple(et.event_shape)


@pytest.mark.parametrize("spec", [s for s in SPECS if s[0] in (
    "Bernoulli", "Categorical", "OneHotCategorical", "Binomial", "BinomialLogits")],
    ids=lambda s: s[0])
def test_enumerate_support(spec):
    de, _, dt, _ = _both(spec)
    for expand in (True, False):
        try:
            st = dt.enumerate_support(expand)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                de.enumerate_support(expand)
            continue
        se = de.enumerate_support(expand)
        assert tuple(se.shape) == tuple(st.shape)
        close(se, st)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_sample_shape_and_support(spec):
    de, _, _, _ = _both(spec)
    ember.manual_seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = de.sample((5,))
    assert tuple(s.shape) == (5,) + tuple(de.batch_shape) + tuple(de.event_shape)
    assert not s.requires_grad
    assert bool(de.support.check(s).all())
    assert bool(ember.isfinite(de.log_prob(s)).all())


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_manual_seed_reproduces(spec):
    de, _, _, _ = _both(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.manual_seed(11)
        a = de.sample((3,))
        ember.manual_seed(11)
        b = de.sample((3,))
    close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("spec", STATS, ids=[s[0] for s in STATS])
def test_sample_mean_and_variance(spec):
    de, _, _, _ = _both(spec)
    n = 20000
    ember.manual_seed(2024)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = npy(de.sample((n,)))
    mean, var = npy(de.mean), npy(de.variance)
    # 6 standard errors: a fixed seed, so this either always passes or always fails
    np.testing.assert_allclose(s.mean(0), mean, atol=6 * np.sqrt(var.max() / n) + 1e-9,
                               rtol=0)
    np.testing.assert_allclose(s.var(0), var, rtol=0.1, atol=1e-3)


RSAMPLE = [s for s in STATS if s[0] not in (
    "Bernoulli", "BernoulliLogits", "OneHotCategorical", "Binomial", "BinomialLogits",
    "Multinomial", "Geometric", "Poisson", "NegativeBinomial", "MixtureSameFamily",
    "OneHotCategoricalStraightThrough",
    # inside its Taylor region (probs near 1/2) the sample does not depend on probs
    "ContinuousBernoulli")]


@pytest.mark.parametrize("spec", RSAMPLE, ids=[s[0] for s in RSAMPLE])
def test_rsample_gradient_of_expectation(spec):
    """d/dtheta E[x] from reparameterized samples matches the gradient of the analytic
    mean (Gamma, Beta, Dirichlet, Chi2 through the implicit Gamma gradient)."""
    de, pe, _, _ = _both(spec)
    assert de.has_rsample
    ember.manual_seed(7)
    n = 40000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = de.rsample((n,))
    params = [(k, v) for k, v in vars(pe).items()
              if isinstance(v, ember.Tensor) and v.requires_grad]
    w = np.random.default_rng(0).uniform(0.5, 1.5, tuple(s.shape[1:]))
    if len(de.event_shape) == 2:
        # matrix parameters enter through a Cholesky factor: only symmetric directions
        w = (w + np.swapaxes(w, -1, -2)) / 2
    w = ember.tensor(w, dtype=s.dtype)
    est = ember.autograd.grad((s.mean(0) * w).sum(), [v for _, v in params],
                              retain_graph=True, allow_unused=True)
    exact = ember.autograd.grad((de.mean * w).sum(), [v for _, v in params],
                                allow_unused=True)
    for (k, _), g1, g2 in zip(params, est, exact):
        g1 = np.zeros(tuple(pe_shape(pe, k))) if g1 is None else npy(g1)
        g2 = np.zeros(tuple(pe_shape(pe, k))) if g2 is None else npy(g2)
        np.testing.assert_allclose(g1, g2, rtol=0.08, atol=0.03, err_msg=k)


def pe_shape(pe, k):
    return getattr(pe, k).shape


def test_straight_through_gradient():
    logits = ember.tensor([0.3, -1.0, 2.0], requires_grad=True)
    d = ember.distributions.OneHotCategoricalStraightThrough(logits=logits)
    w = ember.tensor([1.0, 2.0, 3.0])
    (d.rsample() * w).sum().backward()
    lt = torch.tensor([0.3, -1.0, 2.0], requires_grad=True)
    p = torch.softmax(lt, -1)
    (p * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(logits.grad, lt.grad, rtol=1e-6)


def test_standard_gamma_gradient_matches_torch():
    """The implicit reparameterization gradient dx/dalpha agrees with torch's per sample."""
    from ember.distributions._ops import GAMMA_GRAD
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 200.0])
    x = np.stack([np.random.default_rng(i).gamma(alpha) for i in range(20)])
    a = np.broadcast_to(alpha, x.shape).copy()
    ge = GAMMA_GRAD(ember.tensor(a), ember.tensor(x))
    gt = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x))
    close(ge, gt, rtol=2e-3, atol=1e-6)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_float32(spec):
    """In float32 (torch's default) too: dtypes kept, values as torch's."""
    from _dist_specs import convert
    _, builder, params, _ = spec
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        de = builder(ember.distributions, convert(ember, params, "float32"))
        dt = builder(torch.distributions, convert(torch, params, "float32"))
        vt = _torch_value(dt)
        ember.manual_seed(0)
        s = de.sample((2,))
    assert s.dtype == (ember.int64 if type(de).__name__ == "Categorical" else ember.float32)
    le = de.log_prob(ember.tensor(vt.numpy()))
    assert le.dtype == ember.float32
    np.testing.assert_allclose(npy(le), npy(dt.log_prob(vt)), rtol=2e-4, atol=2e-4)
    _same(_try(de.entropy), _try(dt.entropy), rtol=2e-4, atol=2e-4)
