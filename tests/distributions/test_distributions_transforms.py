"""Transforms against torch: forward, inverse, log_abs_det_jacobian (and its gradient),
shapes, event dims, caching, equality; biject_to/transform_to for every constraint."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(5)


def _x(*shape):
    return rng.standard_normal(shape)


def _make(lib, name):
    T = lib.distributions.transforms
    t = lambda a: lib.tensor(a, dtype=lib.float64)  # noqa: E731
    return {
        "Exp": T.ExpTransform(),
        "Power": T.PowerTransform(t(np.array([0.5, 2.0, 3.0]))),
        "Sigmoid": T.SigmoidTransform(),
        "Softplus": T.SoftplusTransform(),
        "Tanh": T.TanhTransform(),
        "Abs": T.AbsTransform(),
        "Affine": T.AffineTransform(t(np.array([1.0, -2.0, 0.5])), t(np.array([2.0, -0.5, 3.0]))),
        "AffineScalar": T.AffineTransform(1.5, -2.0),
        "AffineEvent": T.AffineTransform(t(np.array([1.0, -2.0, 0.5])),
                                         t(np.array([2.0, -0.5, 3.0])), event_dim=1),
        "Softmax": T.SoftmaxTransform(),
        "StickBreaking": T.StickBreakingTransform(),
        "LowerCholesky": T.LowerCholeskyTransform(),
        "PositiveDefinite": T.PositiveDefiniteTransform(),
        "CorrCholesky": T.CorrCholeskyTransform(),
        "Compose": T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform(),
                                       T.PowerTransform(t(np.array(0.5)))]),
        "ComposeEvent": T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()]),
        "Independent": T.IndependentTransform(T.SigmoidTransform(), 1),
        "Reshape": T.ReshapeTransform((2, 3), (3, 2)),
        "Cat": T.CatTransform([T.ExpTransform(), T.SigmoidTransform(),
                               T.AffineTransform(1.0, 3.0)], dim=-1, lengths=[1, 1, 1]),
        "Stack": T.StackTransform([T.ExpTransform(), T.TanhTransform(),
                                   T.AffineTransform(0.0, 2.0)], dim=-1),
        "Identity": T.identity_transform,
        "Cdf": T.CumulativeDistributionTransform(lib.distributions.Normal(
            t(np.array([0.0, 1.0, -1.0])), t(np.array([1.0, 2.0, 0.5])))),
        "InvExp": T.ExpTransform().inv,
    }[name]


INPUTS = {
    "Exp": _x(4, 3), "Power": np.abs(_x(4, 3)) + 0.2, "Sigmoid": _x(4, 3), "Softplus": _x(4, 3),
    "Tanh": _x(4, 3), "Abs": _x(4, 3), "Affine": _x(4, 3), "AffineScalar": _x(4, 3),
    "AffineEvent": _x(4, 3), "Softmax": _x(4, 3), "StickBreaking": _x(4, 3),
    "LowerCholesky": _x(4, 3, 3), "PositiveDefinite": _x(4, 3, 3), "CorrCholesky": _x(4, 6),
    "Compose": _x(4, 3), "ComposeEvent": _x(4, 3), "Independent": _x(4, 3),
    "Reshape": _x(4, 2, 3), "Cat": _x(4, 3), "Stack": _x(4, 3), "Identity": _x(4, 3),
    "Cdf": _x(4, 3), "InvExp": np.abs(_x(4, 3)) + 0.1,
}
NAMES = list(INPUTS)
NO_JACOBIAN = {"Abs", "Softmax", "LowerCholesky", "PositiveDefinite"}


def close(a, b, rtol=1e-7, atol=1e-9):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", NAMES)
def test_forward_inverse_jacobian(name):
    te, tt = _make(ember, name), _make(torch, name)
    xe = ember.tensor(INPUTS[name], dtype=ember.float64, requires_grad=True)
    xt = torch.tensor(INPUTS[name], dtype=torch.float64, requires_grad=True)
    ye, yt = te(xe), tt(xt)
    close(ye, yt)
    close(te.inv(ye), tt.inv(yt))
    assert te.bijective == tt.bijective
    assert te.domain.event_dim == tt.domain.event_dim
    assert te.codomain.event_dim == tt.codomain.event_dim
    assert tuple(te.forward_shape(xe.shape)) == tuple(tt.forward_shape(xt.shape))
    assert tuple(te.inverse_shape(ye.shape)) == tuple(tt.inverse_shape(yt.shape))
    assert bool(te.codomain.check(ye).all()) == bool(tt.codomain.check(yt).all())
    if name in NO_JACOBIAN:
        with pytest.raises(NotImplementedError):
            te.log_abs_det_jacobian(xe, ye)
        return
    je, jt = te.log_abs_det_jacobian(xe, ye), tt.log_abs_det_jacobian(xt, yt)
    assert tuple(je.shape) == tuple(jt.shape)
    close(je, jt, rtol=1e-6, atol=1e-8)
    (je.sum() + ye.sum()).backward()
    (jt.sum() + yt.sum()).backward()
    close(xe.grad, xt.grad, rtol=1e-6, atol=1e-8)
    # the inverse's jacobian is the negated forward one
    close(te.inv.log_abs_det_jacobian(ye, xe), -je)


@pytest.mark.parametrize("name", ["Exp", "Sigmoid", "Tanh", "Affine", "AffineScalar", "Power",
                                  "Softplus", "Cdf", "Compose"])
def test_sign(name):
    se, st = _make(ember, name).sign, _make(torch, name).sign
    se = se.numpy() if hasattr(se, "numpy") else se
    st = st.numpy() if hasattr(st, "numpy") else st
    np.testing.assert_array_equal(se, st)


def test_jacobian_against_finite_differences():
    """log|det J| of the vector-valued bijections against a numerical Jacobian."""
    T = ember.distributions.transforms
    for t, x in ((T.StickBreakingTransform(), _x(3)), (T.CorrCholeskyTransform(), _x(3))):
        x = ember.tensor(x, dtype=ember.float64)
        y = t(x)
        jac = ember.autograd.functional.jacobian(lambda v: t(v).reshape(-1), x).numpy()
        if isinstance(t, T.CorrCholeskyTransform):
            rows, cols = np.tril_indices(3, -1)
            jac = jac.reshape(3, 3, -1)[rows, cols]
        else:
            jac = jac[:-1]  # the last simplex coordinate is determined by the others
        np.testing.assert_allclose(float(t.log_abs_det_jacobian(x, y)),
                                   np.log(abs(np.linalg.det(jac))), rtol=1e-8)


def test_cache_and_equality():
    T = ember.distributions.transforms
    t = T.ExpTransform(cache_size=1)
    x = ember.tensor([0.5, 1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert T.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError):
        T.ExpTransform(cache_size=2)
    assert T.ExpTransform() == T.ExpTransform()
    assert T.ExpTransform().inv == T.ExpTransform().inv
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    assert T.ExpTransform() != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    c = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)])
    assert c.inv.inv is c
    assert c == T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)])
    tc = T.TanhTransform(cache_size=1)
    z = ember.tensor([30.0])
    assert float(tc.inv(tc(z))) == 30.0  # from the cache: atanh(1.0) would be inf
    with pytest.raises(ValueError):
        T.ReshapeTransform((2, 3), (4,))
    assert repr(T.ExpTransform()) == "ExpTransform()"
    assert repr(T.ExpTransform().inv) == "_InverseTransform(ExpTransform())"


CONSTRAINTS = ["real", "positive", "nonnegative", "unit_interval", "simplex", "real_vector",
               "lower_cholesky", "positive_definite", "positive_semidefinite", "corr_cholesky",
               ("greater_than", 1.5), ("greater_than_eq", -2.0), ("less_than", 3.0),
               ("interval", -1.0, 2.0), ("half_open_interval", 0.0, 4.0),
               ("independent_positive", 2), "cat", "stack"]


def _constraint(lib, spec):
    C = lib.distributions.constraints
    if isinstance(spec, tuple):
        if spec[0] == "independent_positive":
            return C.independent(C.positive, spec[1])
        return getattr(C, spec[0])(*spec[1:])
    if spec == "cat":
        return C.cat([C.positive, C.real, C.unit_interval], dim=-1, lengths=[1, 2, 1])
    if spec == "stack":
        return C.stack([C.positive, C.real, C.unit_interval], dim=-1)
    return getattr(C, spec)


def _unconstrained(spec, registry_name):
    name = spec if isinstance(spec, str) else spec[0]
    if name in ("lower_cholesky", "positive_definite", "positive_semidefinite"):
        return _x(2, 3, 3)
    if name == "corr_cholesky":
        return _x(2, 3)
    if name == "cat":
        return _x(2, 4)
    if name == "independent_positive":
        return _x(2, 3, 2)
    return _x(2, 3)


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("spec", CONSTRAINTS, ids=str)
def test_constraint_registries(registry, spec):
    ce, ct = _constraint(ember, spec), _constraint(torch, spec)
    reg_e = getattr(ember.distributions, registry)
    reg_t = getattr(torch.distributions, registry)
    try:
        tt = reg_t(ct)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            reg_e(ce)
        return
    te = reg_e(ce)
    assert type(te).__name__ == type(tt).__name__
    u = _unconstrained(spec, registry)
    ye = te(ember.tensor(u, dtype=ember.float64))
    yt = tt(torch.tensor(u, dtype=torch.float64))
    close(ye, yt, rtol=1e-7, atol=1e-9)
    assert bool(ce.check(ye).all())
    if te.bijective:
        close(te.inv(ye), u, rtol=1e-6, atol=1e-8)


def test_registry_register_and_errors():
    C = ember.distributions.constraints
    reg = ember.distributions.constraint_registry.ConstraintRegistry()
    with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
        reg(C.real)

    @reg.register(C.real)
    def _f(c):
        return ember.distributions.transforms.ExpTransform()

    assert isinstance(reg(C.real), ember.distributions.transforms.ExpTransform)
    with pytest.raises(TypeError):
        reg.register(int, _f)
