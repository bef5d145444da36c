"""The distributions the tests build, each the same way under ember and under torch.

A spec is (id, builder, params, flags): ``builder(D, p)`` builds the distribution from the
module ``D`` (``ember.distributions`` or ``torch.distributions``) and a namespace ``p`` of
parameters converted to that library (float arrays become float64 tensors that require
grad; ("const", array) entries do not require grad; Python numbers pass unchanged).
Flags: ``stats`` (sample mean/variance are checked, so the variance must be finite and
the fourth moment tame), ``f32`` (built in float32).
"""
import types

import numpy as np

_rng = np.random.default_rng(1234)


def randn(*shape):
    return _rng.standard_normal(shape)


def pos(*shape, lo=0.5, hi=2.0):
    return _rng.uniform(lo, hi, shape)


def unit(*shape, lo=0.1, hi=0.9):
    return _rng.uniform(lo, hi, shape)


def spd(n, batch=()):
    a = _rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def const(x):
    return ("const", x)


def convert(lib, params, dtype="float64"):
    """The namespace of parameters for ``lib`` (the ember or torch module)."""
    out = {}
    dt = getattr(lib, dtype)
    for k, v in params.items():
        if isinstance(v, tuple) and v[0] == "const":
            out[k] = lib.tensor(v[1], dtype=dt)
        elif isinstance(v, np.ndarray):
            out[k] = lib.tensor(v, dtype=dt, requires_grad=True)
        else:
            out[k] = v
    return types.SimpleNamespace(**out)


def _mixture(D, p):
    return D.MixtureSameFamily(D.Categorical(logits=p.logits), D.Normal(p.loc, p.scale))


def _transformed(D, p):
    T = D.transforms
    return D.TransformedDistribution(D.Normal(p.loc, p.scale),
                                     [T.ExpTransform(), T.AffineTransform(1.0, 2.0)])


SPECS = [
    ("Normal", lambda D, p: D.Normal(p.loc, p.scale), dict(loc=randn(3), scale=pos(3)),
     {"stats"}),
    ("Uniform", lambda D, p: D.Uniform(p.low, p.high),
     dict(low=np.array([-1.0, 0.0, 2.0]), high=np.array([0.5, 3.0, 2.5])),
     {"stats"}),
    ("Laplace", lambda D, p: D.Laplace(p.loc, p.scale), dict(loc=randn(3), scale=pos(3)),
     {"stats"}),
    ("Cauchy", lambda D, p: D.Cauchy(p.loc, p.scale), dict(loc=randn(3), scale=pos(3)), set()),
    ("Exponential", lambda D, p: D.Exponential(p.rate), dict(rate=pos(3)), {"stats"}),
    ("Gamma", lambda D, p: D.Gamma(p.concentration, p.rate),
     dict(concentration=np.array([0.3, 1.0, 4.5]), rate=pos(3)), {"stats"}),
    ("Chi2", lambda D, p: D.Chi2(p.df), dict(df=np.array([1.5, 3.0, 7.0])), {"stats"}),
    ("Beta", lambda D, p: D.Beta(p.c1, p.c0),
     dict(c1=np.array([0.5, 2.0, 5.0]), c0=np.array([1.5, 0.7, 3.0])), {"stats"}),
    ("Dirichlet", lambda D, p: D.Dirichlet(p.concentration),
     dict(concentration=pos(2, 3, lo=0.4, hi=3.0)), {"stats"}),
    ("Bernoulli", lambda D, p: D.Bernoulli(probs=p.probs), dict(probs=unit(3)), {"stats"}),
    ("BernoulliLogits", lambda D, p: D.Bernoulli(logits=p.logits), dict(logits=randn(3)),
     {"stats"}),
    ("Categorical", lambda D, p: D.Categorical(probs=p.probs), dict(probs=pos(2, 4)), set()),
    ("CategoricalLogits", lambda D, p: D.Categorical(logits=p.logits),
     dict(logits=randn(2, 4)), set()),
    ("OneHotCategorical", lambda D, p: D.OneHotCategorical(probs=p.probs),
     dict(probs=pos(2, 4)), {"stats"}),
    ("OneHotCategoricalStraightThrough",
     lambda D, p: D.OneHotCategoricalStraightThrough(logits=p.logits), dict(logits=randn(3)),
     {"stats"}),
    ("Binomial", lambda D, p: D.Binomial(p.n, probs=p.probs),
     dict(n=const(np.array([5.0, 10.0, 3.0])), probs=unit(3)), {"stats"}),
    ("BinomialLogits", lambda D, p: D.Binomial(6, logits=p.logits), dict(logits=randn(3)),
     {"stats"}),
    ("Multinomial", lambda D, p: D.Multinomial(5, probs=p.probs), dict(probs=pos(2, 3)),
     {"stats"}),
    ("Geometric", lambda D, p: D.Geometric(probs=p.probs), dict(probs=unit(3, lo=0.3)),
     {"stats"}),
    ("Poisson", lambda D, p: D.Poisson(p.rate), dict(rate=pos(3, lo=0.5, hi=6.0)), {"stats"}),
    ("NegativeBinomial", lambda D, p: D.NegativeBinomial(p.n, probs=p.probs),
     dict(n=np.array([2.0, 5.0, 1.5]), probs=unit(3, hi=0.7)), {"stats"}),
    ("Gumbel", lambda D, p: D.Gumbel(p.loc, p.scale), dict(loc=randn(3), scale=pos(3)),
     {"stats"}),
    ("HalfCauchy", lambda D, p: D.HalfCauchy(p.scale), dict(scale=pos(3)), set()),
    ("HalfNormal", lambda D, p: D.HalfNormal(p.scale), dict(scale=pos(3)), {"stats"}),
    ("LogNormal", lambda D, p: D.LogNormal(p.loc, p.scale),
     dict(loc=randn(3) * 0.3, scale=pos(3, lo=0.2, hi=0.5)), {"stats"}),
    ("StudentT", lambda D, p: D.StudentT(p.df, p.loc, p.scale),
     dict(df=np.array([5.0, 9.0, 12.0]), loc=randn(3), scale=pos(3)), {"stats"}),
    ("Pareto", lambda D, p: D.Pareto(p.scale, p.alpha),
     dict(scale=pos(3), alpha=np.array([5.0, 6.5, 9.0])), {"stats"}),
    ("Weibull", lambda D, p: D.Weibull(p.scale, p.concentration),
     dict(scale=pos(3), concentration=np.array([0.9, 1.7, 3.0])), {"stats"}),
    ("Kumaraswamy", lambda D, p: D.Kumaraswamy(p.c1, p.c0),
     dict(c1=np.array([0.8, 2.0, 3.5]), c0=np.array([1.2, 2.5, 0.9])), {"stats"}),
    ("VonMises", lambda D, p: D.VonMises(p.loc, p.concentration),
     dict(loc=randn(3), concentration=np.array([0.5, 2.0, 8.0])), set()),
    ("MultivariateNormalCov", lambda D, p: D.MultivariateNormal(p.loc, covariance_matrix=p.c),
     dict(loc=randn(2, 3), c=spd(3)), {"stats"}),
    ("MultivariateNormalPrec", lambda D, p: D.MultivariateNormal(p.loc, precision_matrix=p.c),
     dict(loc=randn(3), c=spd(3, (2,))), {"stats"}),
    ("MultivariateNormalTril", lambda D, p: D.MultivariateNormal(p.loc, scale_tril=p.c),
     dict(loc=randn(3), c=np.linalg.cholesky(spd(3))), {"stats"}),
    ("LowRankMultivariateNormal",
     lambda D, p: D.LowRankMultivariateNormal(p.loc, p.cov_factor, p.cov_diag),
     dict(loc=randn(2, 3), cov_factor=randn(3, 2), cov_diag=pos(3)), {"stats"}),
    ("Independent", lambda D, p: D.Independent(D.Normal(p.loc, p.scale), 1),
     dict(loc=randn(2, 3), scale=pos(2, 3)), {"stats"}),
    ("MixtureSameFamily", _mixture,
     dict(logits=randn(2, 4), loc=randn(2, 4) * 2, scale=pos(2, 4)), {"stats"}),
    ("TransformedDistribution", _transformed,
     dict(loc=randn(3) * 0.3, scale=pos(3, lo=0.2, hi=0.5)), set()),
    ("RelaxedBernoulli", lambda D, p: D.RelaxedBernoulli(p.t, probs=p.probs),
     dict(t=const(np.array(0.7)), probs=unit(3)), set()),
    ("RelaxedOneHotCategorical",
     lambda D, p: D.RelaxedOneHotCategorical(p.t, logits=p.logits),
     dict(t=const(np.array(0.8)), logits=randn(2, 3)), set()),
    ("LogisticNormal", lambda D, p: D.LogisticNormal(p.loc, p.scale),
     dict(loc=randn(2, 3), scale=pos(2, 3)), set()),
    ("ContinuousBernoulli", lambda D, p: D.ContinuousBernoulli(probs=p.probs),
     dict(probs=np.array([0.2, 0.4995, 0.8])), {"stats"}),
    ("ContinuousBernoulliLogits", lambda D, p: D.ContinuousBernoulli(logits=p.logits),
     dict(logits=randn(3)), {"stats"}),
    ("FisherSnedecor", lambda D, p: D.FisherSnedecor(p.df1, p.df2),
     dict(df1=np.array([8.0, 12.0, 20.0]), df2=np.array([40.0, 50.0, 60.0])), {"stats"}),
    ("LKJCholesky", lambda D, p: D.LKJCholesky(3, p.concentration),
     dict(concentration=np.array([0.5, 2.0])), set()),
    ("Wishart", lambda D, p: D.Wishart(p.df, covariance_matrix=p.c),
     dict(df=np.array([4.0, 6.0]), c=spd(3, (2,))), {"stats"}),
    ("WishartTril", lambda D, p: D.Wishart(p.df, scale_tril=p.c),
     dict(df=np.array(5.0), c=np.linalg.cholesky(spd(2))), {"stats"}),
    ("GeneralizedPareto", lambda D, p: D.GeneralizedPareto(p.loc, p.scale, p.concentration),
     dict(loc=randn(3), scale=pos(3), concentration=np.array([-0.3, 0.05, 0.2])),
     {"stats", "f32"}),
    ("GeneralizedParetoZero",
     lambda D, p: D.GeneralizedPareto(p.loc, p.scale, p.concentration),
     dict(loc=randn(2), scale=pos(2), concentration=const(np.array([0.0, 0.0]))), {"f32"}),
    ("InverseGamma", lambda D, p: D.InverseGamma(p.concentration, p.rate),
     dict(concentration=np.array([5.0, 6.0, 8.0]), rate=pos(3)), {"stats"}),
]

BY_ID = {s[0]: s for s in SPECS}


def build(lib, spec):
    """(distribution, parameter namespace) of ``spec`` under ``lib``."""
    _, builder, params, flags = spec
    # float32 where torch itself only works in float32 (GeneralizedPareto compares with a
    # float32 zero)
    p = convert(lib, params, "float32" if "f32" in flags else "float64")
    return builder(lib.distributions, p), p
