"""kl_divergence for every pair torch registers, against torch (values and gradients),
and the register_kl lookup rules."""
import warnings

import numpy as np
import pytest
import torch
from torch.distributions import kl as tkl

import ember
from _dist_specs import convert, spd

rng = np.random.default_rng(99)
B = 3


def _p(lo, hi):
    return rng.uniform(lo, hi, B)


# parameters per family, chosen so that cross-family KLs are finite where they can be
# (the Uniform lies inside (0, 1), Pareto alphas exceed 2, ...)
FAMILIES = {
    "Bernoulli": (lambda D, p: D.Bernoulli(probs=p.a), dict(a=_p(0.1, 0.9))),
    "Beta": (lambda D, p: D.Beta(p.a, p.b), dict(a=_p(0.5, 3), b=_p(0.5, 3))),
    "Binomial": (lambda D, p: D.Binomial(5, probs=p.a), dict(a=_p(0.1, 0.9))),
    "Categorical": (lambda D, p: D.Categorical(logits=p.a), dict(a=rng.standard_normal((B, 4)))),
    "Cauchy": (lambda D, p: D.Cauchy(p.a, p.b), dict(a=_p(-1, 1), b=_p(0.5, 2))),
    "ContinuousBernoulli": (lambda D, p: D.ContinuousBernoulli(probs=p.a),
                            dict(a=np.array([0.2, 0.4999, 0.7]))),
    "Dirichlet": (lambda D, p: D.Dirichlet(p.a), dict(a=rng.uniform(0.5, 3, (B, 4)))),
    "Exponential": (lambda D, p: D.Exponential(p.a), dict(a=_p(0.5, 2))),
    "Gamma": (lambda D, p: D.Gamma(p.a, p.b), dict(a=_p(0.5, 3), b=_p(0.5, 2))),
    "Geometric": (lambda D, p: D.Geometric(probs=p.a), dict(a=_p(0.2, 0.8))),
    "Gumbel": (lambda D, p: D.Gumbel(p.a, p.b), dict(a=_p(-1, 1), b=_p(0.5, 2))),
    "HalfNormal": (lambda D, p: D.HalfNormal(p.a), dict(a=_p(0.5, 2))),
    "Laplace": (lambda D, p: D.Laplace(p.a, p.b), dict(a=_p(-1, 1), b=_p(0.5, 2))),
    "Normal": (lambda D, p: D.Normal(p.a, p.b), dict(a=_p(-1, 1), b=_p(0.5, 2))),
    "OneHotCategorical": (lambda D, p: D.OneHotCategorical(logits=p.a),
                          dict(a=rng.standard_normal((B, 4)))),
    "Pareto": (lambda D, p: D.Pareto(p.a, p.b), dict(a=_p(0.5, 1.5), b=np.array([0.8, 2.5, 4]))),
    "Poisson": (lambda D, p: D.Poisson(p.a), dict(a=_p(0.5, 4))),
    "Uniform": (lambda D, p: D.Uniform(p.a, p.b), dict(a=_p(0.1, 0.3), b=_p(0.5, 0.9))),
    "MultivariateNormal": (lambda D, p: D.MultivariateNormal(p.a, covariance_matrix=p.b),
                           dict(a=rng.standard_normal((B, 3)), b=spd(3, (B,)))),
    "LowRankMultivariateNormal": (
        lambda D, p: D.LowRankMultivariateNormal(p.a, p.b, p.c),
        dict(a=rng.standard_normal((B, 3)), b=rng.standard_normal((3, 2)), c=_p(0.5, 2))),
    "Independent": (lambda D, p: D.Independent(D.Normal(p.a, p.b), 1),
                    dict(a=rng.standard_normal((B, 2)), b=rng.uniform(0.5, 2, (B, 2)))),
    "TransformedDistribution": (
        lambda D, p: D.TransformedDistribution(D.Normal(p.a, p.b), [D.ExpTransform()]),
        dict(a=_p(-1, 1), b=_p(0.5, 2))),
}

PAIRS = sorted((p.__name__, q.__name__) for p, q in tkl._KL_REGISTRY)


def _build(lib, name, seed_shift=0):
    builder, params = FAMILIES[name]
    params = {k: v * (1 + 0.1 * seed_shift) if k != "a" or name not in (
        "Bernoulli", "Binomial", "Geometric", "ContinuousBernoulli") else
        np.clip(v + 0.05 * seed_shift, 0.05, 0.95) for k, v in params.items()}
    ns = convert(lib, params)
    return builder(lib.distributions, ns), ns


def test_every_torch_pair_is_registered():
    ours = sorted((p.__name__, q.__name__) for p, q in ember.distributions.kl._KL_REGISTRY)
    assert ours == PAIRS


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_pair_against_torch(pair):
    pn, qn = pair
    if pn == "ExponentialFamily":
        pn = qn = "Gamma"  # a member; the Bregman fallback itself is tested below
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pe, pep = _build(ember, pn)
        qe, qep = _build(ember, qn, 1)
        pt, ptp = _build(torch, pn)
        qt, qtp = _build(torch, qn, 1)
    ke = ember.distributions.kl_divergence(pe, qe)
    kt = torch.distributions.kl_divergence(pt, qt)
    assert tuple(ke.shape) == tuple(kt.shape)
    np.testing.assert_allclose(ke.detach().numpy(), kt.detach().numpy(), rtol=1e-6, atol=1e-8)
    finite = np.isfinite(kt.detach().numpy())
    if finite.any() and kt.requires_grad:
        wt = torch.tensor(finite.astype(np.float64))
        (torch.where(wt > 0, kt, 0.0)).sum().backward()
        (ember.where(ember.tensor(finite), ke, 0.0)).sum().backward()
        for ns_e, ns_t in ((pep, ptp), (qep, qtp)):
            for k, v in vars(ns_t).items():
                if isinstance(v, torch.Tensor) and v.grad is not None:
                    np.testing.assert_allclose(getattr(ns_e, k).grad.numpy(), v.grad.numpy(),
                                               rtol=1e-5, atol=1e-8, err_msg=k)


def test_expfamily_bregman_fallback():
    """Families without their own pair use the Bregman divergence of the log normalizer:
    Poisson-Poisson through ExponentialFamily equals the closed form."""
    D = ember.distributions
    fn = D.kl._KL_REGISTRY[D.ExponentialFamily, D.ExponentialFamily]
    for mk in (lambda L, a: L.distributions.Poisson(a), lambda L, a: L.distributions.Exponential(a),
               lambda L, a: L.distributions.Normal(a, a * 0.5 + 1)):
        a1, a2 = np.array([0.5, 1.5, 3.0]), np.array([1.0, 0.7, 2.0])
        ke = fn(mk(ember, ember.tensor(a1)), mk(ember, ember.tensor(a2)))
        kt = torch.distributions.kl._kl_expfamily_expfamily(mk(torch, torch.tensor(a1)),
                                                            mk(torch, torch.tensor(a2)))
        np.testing.assert_allclose(ke.detach().numpy(), kt.detach().numpy(), rtol=1e-8)
    with pytest.raises(NotImplementedError):
        fn(D.Poisson(ember.tensor([1.0])), D.Exponential(ember.tensor([1.0])))


def test_expfamily_entropy_matches_closed_form():
    """ExponentialFamily.entropy (by autograd) equals the families' closed forms."""
    D = ember.distributions
    for d in (D.Gamma(ember.tensor([0.5, 2.0]), ember.tensor([1.5, 0.3])),
              D.Exponential(ember.tensor([0.5, 2.0])),
              D.Normal(ember.tensor([0.5, 2.0]), ember.tensor([1.5, 0.3]))):
        np.testing.assert_allclose(D.ExponentialFamily.entropy(d).detach().numpy(),
                                   d.entropy().detach().numpy(), rtol=1e-5)


def test_unregistered_pair_raises():
    D = ember.distributions
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.VonMises(ember.tensor(0.0), ember.tensor(1.0)),
                        D.Normal(ember.tensor(0.0), ember.tensor(1.0)))


def test_register_kl_most_specific_and_ambiguity():
    D = ember.distributions

    class MyNormal(D.Normal):
        pass

    class MyNormal2(D.Normal):
        pass

    p, q = MyNormal(ember.tensor(0.0), ember.tensor(1.0)), MyNormal(ember.tensor(1.0),
                                                                     ember.tensor(2.0))
    base = float(D.kl_divergence(p, q))
    expected = float(torch.distributions.kl_divergence(
        torch.distributions.Normal(0.0, 1.0), torch.distributions.Normal(1.0, 2.0)))
    assert abs(base - expected) < 1e-6

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return ember.tensor(-1.0)

    try:
        assert float(D.kl_divergence(p, q)) == -1.0

        @D.register_kl(D.Normal, MyNormal)
        def _other(p, q):
            return ember.tensor(-2.0)

        with pytest.warns(RuntimeWarning, match="Ambiguous kl_divergence"):
            D.kl_divergence(p, q)
        assert float(D.kl_divergence(MyNormal2(0.0, 1.0), p)) == -2.0
    finally:
        reg = D.kl._KL_REGISTRY
        reg.pop((MyNormal, D.Normal), None)
        reg.pop((D.Normal, MyNormal), None)
        D.kl._KL_MEMOIZE.clear()


def test_register_kl_takes_any_classes_like_torch():
    # torch's check only refuses what is not a class (Pyro registers its own bases)
    class Base:
        pass
    for lib in (torch, ember):
        D = lib.distributions
        fn = D.register_kl(Base, D.Normal)(lambda p, q: None)
        assert D.kl._KL_REGISTRY.pop((Base, D.Normal)) is fn
        D.kl._KL_MEMOIZE.clear()
    for args in ((3, "Normal"), ("Normal", 3)):
        msgs = []
        for lib in (torch, ember):
            D = lib.distributions
            with pytest.raises(TypeError) as info:
                D.register_kl(*(getattr(D, a) if isinstance(a, str) else a for a in args))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]
