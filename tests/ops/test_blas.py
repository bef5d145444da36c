"""matmul family, einsum, cross, cdist: behaviour beyond the op database (messages, warnings,
double backward, aliasing)."""
import warnings

import numpy as np
import pytest
import torch

import ember


def _pair(shape_a, shape_b, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)
    return a, b


@pytest.mark.parametrize("sa,sb,da,db", [
    ((2, 3), (4, 5), "float32", "float32"), ((3,), (4,), "float32", "float32"),
    ((2, 3), (4,), "float32", "float32"), ((4,), (2, 3), "float32", "float32"),
    ((2, 2, 3), (2, 4, 5), "float32", "float32"), ((2, 2, 3), (3, 4, 5), "float32", "float32"),
    ((), (3,), "float32", "float32"), ((2, 3), (3, 4), "float32", "float64"),
    ((3,), (3,), "float32", "float64"), ((2, 3), (3, 4), "int32", "int64")])
def test_matmul_error_messages_match_torch(sa, sb, da, db):
    args_t = (torch.ones(sa, dtype=getattr(torch, da)), torch.ones(sb, dtype=getattr(torch, db)))
    args_e = (ember.ones(sa, dtype=getattr(ember, da)), ember.ones(sb, dtype=getattr(ember, db)))
    with pytest.raises(RuntimeError) as te:
        torch.matmul(*args_t)
    with pytest.raises(RuntimeError) as ee:
        ember.matmul(*args_e)
    assert str(ee.value) == str(te.value)


def test_mm_shape_message():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and "
                                           r"4x5\)"):
        ember.mm(ember.ones(2, 3), ember.ones(4, 5))


def test_int_matmul_matches_torch():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    b = np.arange(8, dtype=np.int64).reshape(4, 2) - 3
    r = ember.from_numpy(a) @ ember.from_numpy(b)
    assert r.dtype == ember.int64
    np.testing.assert_array_equal(r.numpy(), (torch.from_numpy(a) @ torch.from_numpy(b)).numpy())


def test_imatmul_rebinds_like_torch():
    a, b = _pair((2, 2), (2, 2))
    x = ember.from_numpy(a.copy())
    y = x
    x @= ember.from_numpy(b)
    np.testing.assert_allclose(x.numpy(), a @ b)
    np.testing.assert_array_equal(y.numpy(), a)  # the original tensor is untouched


def test_rmatmul_with_tensor():
    a, b = _pair((2, 3), (3, 2))
    r = ember.from_numpy(b).__rmatmul__(ember.from_numpy(a))
    np.testing.assert_allclose(r.numpy(), a @ b)


def test_addmm_beta_zero_ignores_nan_input():
    a, b = _pair((2, 3), (3, 4))
    inp = np.full((2, 4), np.nan)
    e = ember.addmm(ember.from_numpy(inp), ember.from_numpy(a), ember.from_numpy(b), beta=0)
    np.testing.assert_allclose(e.numpy(), a @ b)


def test_addmm_inplace_bumps_version():
    a, b = _pair((2, 3), (3, 4))
    x = ember.zeros(2, 4, dtype=ember.float64)
    v = x._version
    x.addmm_(ember.from_numpy(a), ember.from_numpy(b), alpha=2)
    assert x._version == v + 1
    np.testing.assert_allclose(x.numpy(), 2 * (a @ b))


def test_matmul_double_backward_matches_torch():
    a, b = _pair((3, 4), (4, 2))
    outs = []
    for lib in (ember, torch):
        x = lib.from_numpy(a.copy()).requires_grad_(True)
        y = lib.from_numpy(b.copy()).requires_grad_(True)
        (gx,) = lib.autograd.grad((x @ y).pow(2).sum(), (x,), create_graph=True)
        (gy,) = lib.autograd.grad(gx.sum(), (y,))
        outs.append(gy.detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10)


def test_complex_matmul_grad_conjugate_wirtinger():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    b = rng.standard_normal((3,)) + 1j * rng.standard_normal((3,))
    grads = []
    for lib in (ember, torch):
        x = lib.from_numpy(a.copy()).requires_grad_(True)
        y = lib.from_numpy(b.copy()).requires_grad_(True)
        (x @ y).abs().sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-10)


@pytest.mark.parametrize("eq", ["ba,ab", "Ba,aC", "ab,Ab", "...ab,...b"])
def test_einsum_implicit_output_order(eq):
    rng = np.random.default_rng(2)
    terms = eq.split(",")
    shapes = [tuple(2 + (ord(c) % 3) for c in t.replace("...", "")) for t in terms]
    if "..." in eq:
        shapes = [(4,) + s for s in shapes]
    ops = [rng.standard_normal(s) for s in shapes]
    e = ember.einsum(eq, *[ember.from_numpy(o) for o in ops])
    t = torch.einsum(eq, *[torch.from_numpy(o) for o in ops])
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10)


def test_einsum_permutation_result_has_own_storage():
    a = ember.from_numpy(np.arange(6.0).reshape(2, 3))
    r = ember.einsum("ij->ji", a)
    r.add_(1)
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0).reshape(2, 3))


def test_einsum_diagonal_grad_double_backward():
    a = np.random.default_rng(3).standard_normal((3, 3))
    outs = []
    for lib in (ember, torch):
        x = lib.from_numpy(a.copy()).requires_grad_(True)
        y = lib.einsum("ii->i", x * x)
        (g,) = lib.autograd.grad(y.sum(), (x,), create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), (x,))
        outs.append((g.detach().numpy(), gg.numpy()))
    for e, t in zip(*outs):
        np.testing.assert_allclose(e, t, rtol=1e-10)


def test_cross_default_dim_warns_once():
    from ember.ops import blas
    blas._WARNED.discard("cross")
    a = ember.ones(3, 3)
    with pytest.warns(UserWarning, match="without specifying the dim"):
        ember.cross(a, a)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.cross(a, a)
    blas._WARNED.discard("cross")  # leave the once-flag as a fresh process has it


def test_cdist_grad_zero_at_coincident_points():
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    for p in (1.0, 2.0, 3.0):
        grads = []
        for lib in (ember, torch):
            a = lib.from_numpy(x.copy()).requires_grad_(True)
            b = lib.from_numpy(x.copy()).requires_grad_(True)
            lib.cdist(a, b, p=p).sum().backward()
            grads.append((a.grad.numpy(), b.grad.numpy()))
        for e, t in zip(*grads):
            np.testing.assert_allclose(e, t, atol=1e-12)


def test_cdist_invalid_compute_mode():
    with pytest.raises(RuntimeError, match="not a valid value for compute_mode"):
        ember.cdist(ember.ones(2, 3), ember.ones(2, 3), compute_mode="fast")


def test_tensordot_dims_tensor_and_out():
    a, b = _pair((2, 3, 4), (3, 4, 5))
    out = ember.empty(0, dtype=ember.float64)
    r = ember.tensordot(ember.from_numpy(a), ember.from_numpy(b), dims=2, out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), np.tensordot(a, b, 2))
