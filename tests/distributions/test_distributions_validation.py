"""Argument and sample validation (same exception types and messages as torch), the
constraints' checks, and the Distribution base-class API."""
import warnings

import numpy as np
import pytest
import torch

import ember
from _dist_specs import SPECS, build


@pytest.fixture(autouse=True)
def _torch_validates():
    """torch.compile switches torch's argument validation off for the whole process (its
    Dynamo patches Distribution.set_default_validate_args(False)); other tests in the same
    worker may have compiled: the oracle validates here, as torch does by default."""
    prev = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(prev)


def _msg(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.type, str(info.value)


def _same_error(fe, ft):
    te, me = _msg(fe)
    tt, mt = _msg(ft)
    assert te.__name__ == tt.__name__, (me, mt)
    assert me == mt.replace("torch.", "ember."), (me, mt)


BAD_PARAMS = [
    ("Normal", lambda L: L.distributions.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, -1.0]))),
    ("Gamma", lambda L: L.distributions.Gamma(L.tensor([0.0]), L.tensor([1.0]))),
    ("Bernoulli", lambda L: L.distributions.Bernoulli(probs=L.tensor([1.5]))),
    ("Categorical", lambda L: L.distributions.Categorical(probs=L.tensor([0.5, -0.5, 1.0]))),
    ("Beta", lambda L: L.distributions.Beta(L.tensor([1.0]), L.tensor([-1.0]))),
    ("Dirichlet", lambda L: L.distributions.Dirichlet(L.tensor([1.0, 0.0]))),
    ("Poisson", lambda L: L.distributions.Poisson(L.tensor([-1.0]))),
    ("MultivariateNormal", lambda L: L.distributions.MultivariateNormal(
        L.zeros(2), covariance_matrix=L.tensor([[1.0, 2.0], [2.0, 1.0]]))),
    ("Binomial", lambda L: L.distributions.Binomial(L.tensor([2.5]), probs=L.tensor([0.5]))),
]


@pytest.mark.parametrize("case", BAD_PARAMS, ids=[c[0] for c in BAD_PARAMS])
def test_invalid_parameters_raise_like_torch(case):
    _, make = case
    _same_error(lambda: make(ember), lambda: make(torch))


def test_either_probs_or_logits():
    for L in (ember, torch):
        D = L.distributions
        for cls in (D.Bernoulli, D.Categorical, D.Geometric):
            with pytest.raises(ValueError, match="Either `probs` or `logits`"):
                cls()
            with pytest.raises(ValueError, match="Either `probs` or `logits`"):
                cls(L.tensor([0.5]), L.tensor([0.0]))


BAD_VALUES = [
    ("Normal-shape", lambda L: L.distributions.Normal(L.zeros(3), L.ones(3)),
     lambda L: L.zeros(2)),
    ("Normal-type", lambda L: L.distributions.Normal(L.zeros(3), L.ones(3)), lambda L: 0.5),
    ("Exponential-support", lambda L: L.distributions.Exponential(L.ones(2)),
     lambda L: L.tensor([1.0, -1.0])),
    ("Bernoulli-support", lambda L: L.distributions.Bernoulli(probs=L.tensor([0.3])),
     lambda L: L.tensor([0.5])),
    ("Categorical-support", lambda L: L.distributions.Categorical(logits=L.zeros(3)),
     lambda L: L.tensor(3)),
    ("Dirichlet-event", lambda L: L.distributions.Dirichlet(L.ones(3)),
     lambda L: L.tensor([0.5, 0.5])),
    ("Beta-support", lambda L: L.distributions.Beta(L.ones(2), L.ones(2)),
     lambda L: L.tensor([0.5, 1.5])),
    ("MVN-event", lambda L: L.distributions.MultivariateNormal(
        L.zeros(2), L.eye(2)), lambda L: L.zeros(3)),
]


@pytest.mark.parametrize("case", BAD_VALUES, ids=[c[0] for c in BAD_VALUES])
def test_invalid_values_raise_like_torch(case):
    _, make, value = case
    _same_error(lambda: make(ember).log_prob(value(ember)),
                lambda: make(torch).log_prob(value(torch)))


def test_validate_args_false_and_default():
    D = ember.distributions
    d = D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    assert d.log_prob(ember.tensor([0.0])).isnan().all()
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
        assert not D.Normal(0.0, 1.0)._validate_args
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(ember.tensor([0.0]), ember.tensor([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_repr_and_scalar_parameters():
    D = ember.distributions
    assert repr(D.Normal(ember.zeros(2), ember.ones(2))) == \
        repr(torch.distributions.Normal(torch.zeros(2), torch.ones(2))).replace("torch", "ember")
    assert repr(D.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    d = D.Normal(0.0, 1.0)
    assert tuple(d.batch_shape) == () and d.loc.dtype == ember.float32
    loc = ember.zeros(2, requires_grad=True)
    assert D.Normal(loc, ember.ones(2)).loc is loc  # no needless broadcast view
    assert d.sample().shape == ()
    assert tuple(D.Normal(ember.zeros(2, dtype=ember.float64), 1.0).scale.shape) == (2,)
    assert D.Normal(ember.zeros(2, dtype=ember.float64), 1.0).scale.dtype == ember.float64
    with pytest.raises(ValueError, match="Input arguments must all be instances"):
        D.Normal("a", 1.0)


def test_sample_n_warns_and_base_class():
    D = ember.distributions
    d = D.Normal(ember.zeros(2), ember.ones(2))
    with pytest.warns(UserWarning, match="sample_n will be deprecated"):
        assert tuple(d.sample_n(3).shape) == (3, 2)
    base = D.Distribution(ember.Size([2]), validate_args=False)
    for fn in (base.sample, lambda: base.log_prob(ember.zeros(2)), base.entropy,
               lambda: base.mean, lambda: base.variance, lambda: base.cdf(ember.zeros(2)),
               lambda: base.icdf(ember.zeros(2)), base.enumerate_support, lambda: base.mode):
        with pytest.raises(NotImplementedError):
            fn()
    assert tuple(base._extended_shape((3,))) == (3, 2)


def test_rsample_gradients_flow_and_sample_does_not():
    loc = ember.tensor([0.5, 1.0], requires_grad=True)
    scale = ember.tensor([1.0, 2.0], requires_grad=True)
    d = ember.distributions.Normal(loc, scale)
    ember.manual_seed(0)
    s = d.rsample((3,))
    ember.manual_seed(0)
    eps = ember.randn(3, 2)
    np.testing.assert_allclose(s.detach().numpy(), (loc + eps * scale).detach().numpy())
    s.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [3.0, 3.0])
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-6)
    assert not d.sample((2,)).requires_grad
    with pytest.raises(NotImplementedError):
        ember.distributions.Bernoulli(probs=ember.tensor([0.5])).rsample()


# ---- constraints ------------------------------------------------------------------------

def _constraints(lib):
    C = lib.distributions.constraints
    return {
        "real": C.real, "positive": C.positive, "nonnegative": C.nonnegative,
        "boolean": C.boolean, "unit_interval": C.unit_interval,
        "nonnegative_integer": C.nonnegative_integer, "positive_integer": C.positive_integer,
        "greater_than": C.greater_than(0.3), "greater_than_eq": C.greater_than_eq(0.3),
        "less_than": C.less_than(0.2), "interval": C.interval(-0.5, 0.5),
        "half_open_interval": C.half_open_interval(-0.5, 0.5),
        "integer_interval": C.integer_interval(0, 2), "real_vector": C.real_vector,
        "independent": C.independent(C.positive, 1), "simplex": C.simplex,
        "one_hot": C.one_hot, "multinomial": C.multinomial(3),
        "lower_triangular": C.lower_triangular, "lower_cholesky": C.lower_cholesky,
        "corr_cholesky": C.corr_cholesky, "square": C.square, "symmetric": C.symmetric,
        "positive_definite": C.positive_definite,
        "positive_semidefinite": C.positive_semidefinite,
        "cat": C.cat([C.positive, C.real], dim=-1, lengths=[1, 2]),
        "stack": C.stack([C.positive, C.real, C.unit_interval], dim=-1),
    }


def _values():
    r = np.random.default_rng(0)
    vec = [r.standard_normal((4, 3)), np.abs(r.standard_normal((4, 3))),
           np.array([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 2.0]]),
           np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0], [3.0, 0.0, 0.0], [0.5, 1.0, 0.0]])]
    a = r.standard_normal((3, 3, 3))
    mats = [a, a @ np.swapaxes(a, -1, -2) + np.eye(3), np.tril(a),
            np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(3))]
    corr = mats[3] / np.linalg.norm(mats[3], axis=-1, keepdims=True)
    return vec + mats + [corr, -np.eye(3)[None], np.zeros((2, 3, 3))]


@pytest.mark.parametrize("name", list(_constraints(torch)))
def test_constraint_checks_match_torch(name):
    ce, ct = _constraints(ember)[name], _constraints(torch)[name]
    assert repr(ce) == repr(ct)
    assert ce.is_discrete == ct.is_discrete
    assert ce.event_dim == ct.event_dim
    for v in _values():
        if v.ndim < 2 + ct.event_dim - 1 or (ct.event_dim == 2 and v.ndim < 3):
            continue
        try:
            rt = ct.check(torch.tensor(v))
        except Exception as e:  # noqa: BLE001 - the same exception type is required
            with pytest.raises(type(e)):
                ce.check(ember.tensor(v))
            continue
        re_ = ce.check(ember.tensor(v))
        assert tuple(re_.shape) == tuple(rt.shape), (v.shape, re_.shape, rt.shape)
        np.testing.assert_array_equal(re_.numpy(), rt.numpy())


def test_dependent_constraints():
    C = ember.distributions.constraints
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity"):
        C.dependent.check(ember.zeros(1))
    with pytest.raises(NotImplementedError):
        C.dependent.event_dim
    d = C.dependent(is_discrete=True, event_dim=1)
    assert d.is_discrete and d.event_dim == 1
    s = ember.distributions.Uniform(ember.zeros(2), ember.ones(2)).support
    assert repr(s) == "Interval(lower_bound=tensor([0., 0.]), upper_bound=tensor([1., 1.]))"
    assert isinstance(ember.distributions.Uniform.support, C._DependentProperty)
    assert C.is_dependent(ember.distributions.Uniform.support)


@pytest.mark.parametrize("spec", SPECS, ids=[s[0] for s in SPECS])
def test_arg_constraints_and_support_match_torch(spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        de, _ = build(ember, spec)
        dt, _ = build(torch, spec)
    assert sorted(de.arg_constraints) == sorted(dt.arg_constraints)
    for k in dt.arg_constraints:
        assert repr(de.arg_constraints[k]).replace("ember.", "torch.") == \
            repr(dt.arg_constraints[k])
    assert type(de.support).__name__ == type(dt.support).__name__
    assert de.support.event_dim == dt.support.event_dim
    assert de.support.is_discrete == dt.support.is_discrete


def test_uniform_low_must_be_below_high():
    _same_error(lambda: ember.distributions.Uniform(ember.tensor([1.0]), ember.tensor([0.5])),
                lambda: torch.distributions.Uniform(torch.tensor([1.0]), torch.tensor([0.5])))
