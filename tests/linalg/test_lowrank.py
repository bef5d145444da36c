"""svd_lowrank / pca_lowrank against torch: with the same seed the same random start, so
the same singular values and (up to each vector's sign, see bugs: linalg.svd of wide
matrices) the same singular vectors; the errors."""
import warnings

import numpy as np
import pytest
import torch

import ember


def _both(name, shape, dtype, **kw):
    A = np.random.RandomState(1).randn(*shape)
    out = []
    for lib in (torch, ember):
        lib.manual_seed(3)
        out.append([t.numpy() for t in getattr(lib, name)(lib.tensor(A, dtype=getattr(lib, dtype)),
                                                           **kw)])
    return A, out


@pytest.mark.parametrize("shape", [(20, 8), (8, 20), (3, 30, 12)])
@pytest.mark.parametrize("dtype, tol", [("float64", 1e-10), ("float32", 2e-4)])
@pytest.mark.parametrize("name, kw", [("svd_lowrank", {}), ("svd_lowrank", {"q": 3, "niter": 0}),
                                      ("pca_lowrank", {}),
                                      ("pca_lowrank", {"q": 4, "center": False})])
def test_lowrank_matches_torch(shape, dtype, tol, name, kw):
    A, ((Ut, St, Vt), (Ue, Se, Ve)) = _both(name, shape, dtype, **kw)
    assert Ue.dtype == Ut.dtype and (Ue.shape, Se.shape, Ve.shape) == (Ut.shape, St.shape,
                                                                        Vt.shape)
    np.testing.assert_allclose(Se, St, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.abs(Ue), np.abs(Ut), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.abs(Ve), np.abs(Vt), rtol=tol, atol=tol)
    # each factorisation is a rank-q approximation of the same matrix
    np.testing.assert_allclose((Ue * Se[..., None, :]) @ np.swapaxes(Ve, -1, -2),
                               (Ut * St[..., None, :]) @ np.swapaxes(Vt, -1, -2),
                               rtol=tol, atol=tol * 10)
    # the global RNG moved the same way
    assert ember.rand(2).tolist() == pytest.approx(torch.rand(2).tolist(), abs=0)


def test_lowrank_exact_rank_recovers_the_matrix_and_errors():
    rs = np.random.RandomState(0)
    A = rs.randn(15, 3) @ rs.randn(3, 9)
    U, S, V = ember.svd_lowrank(ember.tensor(A), q=5)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, A, atol=1e-10)
    for lib in (torch, ember):
        with pytest.raises(ValueError, match=r"q\(=10\) must be non-negative integer and not "
                                             r"greater than min\(m, n\)=9"):
            lib.pca_lowrank(lib.tensor(A), q=10)
        with pytest.raises(ValueError, match=r"niter\(=-1\) must be non-negative integer"):
            lib.pca_lowrank(lib.tensor(A), niter=-1)


def test_pca_lowrank_of_a_sparse_matrix():
    A = np.random.RandomState(1).randn(12, 7)
    A[A < 0.3] = 0
    got = []
    for lib in (torch, ember):
        lib.manual_seed(3)
        with warnings.catch_warnings():   # torch's note on sparse invariant checks
            warnings.simplefilter("ignore", UserWarning)
            got.append(lib.pca_lowrank(lib.tensor(A).to_sparse(), q=3)[1].numpy())
    ember.manual_seed(3)
    dense = ember.pca_lowrank(ember.tensor(A), q=3)[1].numpy()
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], dense, rtol=1e-12)
