"""gradcheck (complex128) and gradgradcheck (float64, complex128) of ember.linalg, and
torch's gauge errors for losses that depend on the phase of complex vectors."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck


def _t(a, rg=True):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_(rg)


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype == "complex128":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _gen(n, dtype, batch=(), seed=0):
    return _rand(batch + (n, n), dtype, seed) / 2 + 2 * np.eye(n)


def _herm(A):
    return (A + A.mH) / 2


def _spd(A):
    return A @ A.mH + ember.from_numpy(np.eye(A.shape[-1])).to(A.dtype)


L = ember.linalg
CASES = {
    "inv": (lambda A: L.inv(A), "sq"),
    "det": (lambda A: L.det(A), "sq"),
    "slogdet": (lambda A: L.slogdet(A).logabsdet, "sq"),
    "solve": (lambda A: L.solve(A, A[..., :, :1] * 2 + 1), "sq"),
    "solve_triangular": (lambda A: L.solve_triangular(A, A.mH, upper=True), "sq"),
    "cholesky": (lambda A: L.cholesky(_spd(A)), "sq"),
    "cholesky_upper": (lambda A: L.cholesky(_spd(A), upper=True), "sq"),
    "cholesky_solve": (lambda A: ember.linalg.cholesky_solve(A[..., :, :2],
                                                             L.cholesky(_spd(A))), "sq"),
    "qr": (lambda A: L.qr(A), "rect"),
    "qr_wide": (lambda A: L.qr(A.mT), "rect"),
    "lu_factor": (lambda A: L.lu_factor(A).LU, "sq"),
    "lu_tall": (lambda A: L.lu(A)[1:], "rect"),
    "lu_wide": (lambda A: L.lu(A.mT)[1:], "rect"),
    "lu_solve": (lambda A: L.lu_solve(*L.lu_factor(A), A * 2), "sq"),
    "eigh": (lambda A: (lambda r: (r[0], r[1] * r[1].conj(),
                                   (r[1] * r[0].unsqueeze(-2)) @ r[1].mH))(L.eigh(_herm(A))),
             "sq"),
    "eig": (lambda A: (lambda r: ((r[1] * r[0].unsqueeze(-2).exp()) @ L.inv(r[1]),
                                  r[0].sum(-1)))(L.eig(A)), "sq"),
    "svd": (lambda A: (lambda r: (r[1], r[0] @ r[2], r[0] * r[0].conj()))(
        L.svd(A, full_matrices=False)), "rect"),
    "pinv": (lambda A: L.pinv(A), "rect"),
    "lstsq": (lambda A: L.lstsq(A, A[..., :, :1].sin()).solution, "rect"),
    "matrix_exp": (lambda A: L.matrix_exp(A / 4), "sq"),
    "matrix_power": (lambda A: L.matrix_power(A, -2), "sq"),
    "householder_product": (lambda A: L.householder_product(A / 3, A[..., 0, :2] / 3), "rect"),
    "matrix_norm_nuc": (lambda A: L.matrix_norm(A, "nuc"), "rect"),
    "cond": (lambda A: L.cond(A), "rect"),
}


def _input(kind, dtype):
    if kind == "sq":
        return _gen(3, dtype, (2,))
    return _rand((2, 4, 3), dtype, 1)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_complex(name):
    fn, kind = CASES[name]
    A = _t(_input(kind, "complex128"))
    assert gradcheck(fn, (A,), eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradgradcheck(name, dtype):
    fn, kind = CASES[name]
    A = _t(_input(kind, dtype)[:1])
    assert gradgradcheck(fn, (A,), eps=1e-6, atol=1e-4, rtol=1e-3)


def _both(fn_name, loss, a):
    """Run ``loss(lib.linalg.<fn_name>(A))``'s backward in torch and ember; both raise or agree."""
    out = []
    for lib in (torch, ember):
        A = lib.from_numpy(a.copy()).requires_grad_(True)
        try:
            loss(lib, getattr(lib.linalg, fn_name)(A)).backward()
            out.append(A.grad.numpy() if lib is torch else A.grad._data)
        except RuntimeError as e:
            out.append(type(e))
    return out


@pytest.mark.parametrize("fn_name,loss,prefix", [
    ("eigh", lambda lib, r: r[1].real.sum(), "linalg_eigh_backward"),
    ("eig", lambda lib, r: r[1].real.sum(), "linalg_eig_backward"),
    ("svd", lambda lib, r: r[0].real.sum(), "svd_backward"),
])
def test_gauge_dependent_loss_raises(fn_name, loss, prefix):
    a = _gen(3, "complex128", seed=3)
    if fn_name == "eigh":
        a = (a + a.conj().T) / 2
    t, e = _both(fn_name, loss, a)
    assert t is RuntimeError and e is RuntimeError
    A = ember.from_numpy(a).requires_grad_(True)
    with pytest.raises(RuntimeError, match=prefix + ".*e\\^\\{i phi\\}"):
        loss(ember, getattr(ember.linalg, fn_name)(A)).backward()


@pytest.mark.parametrize("fn_name,loss", [
    ("eigh", lambda lib, r: (r[1].abs() ** 2 * r[0].unsqueeze(-2)).sum()),
    ("svd", lambda lib, r: (r[0].abs() ** 3).sum() + (r[2].abs() ** 3).sum()),
])
def test_gauge_invariant_complex_grads_match_torch(fn_name, loss):
    a = _gen(4, "complex128", seed=5)
    if fn_name == "eigh":
        a = (a + a.conj().T) / 2
    t, e = _both(fn_name, loss, a)
    np.testing.assert_allclose(e, t, atol=1e-8)


def test_degenerate_eigh_grad_like_torch():
    # repeated eigenvalues: eigenvalue-only losses stay finite, vector losses blow up as in torch
    a = np.diag([1.0, 1.0, 2.0])
    t, e = _both("eigh", lambda lib, r: r[0].pow(2).sum(), a)
    np.testing.assert_allclose(e, t)
    t, e = _both("eigh", lambda lib, r: (r[1] ** 2 * 3).sum() + (r[1][0] ** 4).sum(), a)
    assert np.array_equal(np.isfinite(e), np.isfinite(t))


def test_qr_mode_r_backward_raises():
    A = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='r'"):
        ember.linalg.qr(A, mode="r").R.sum().backward()
    B = ember.randn(4, 3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="mode='complete' and nrows > ncols"):
        ember.linalg.qr(B, mode="complete").Q.sum().backward()
