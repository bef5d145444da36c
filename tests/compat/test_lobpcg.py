"""torch.lobpcg: eigenpairs (standard and generalized, largest and smallest, batched),
block-size rules, errors and eigenvalue gradients against torch."""
import numpy as np
import pytest

import ember

import torch


def E(t):
    return ember.tensor(t.detach().numpy())


def _spd(g, m, *batch):
    M = torch.randn(*batch, m, m, generator=g, dtype=torch.float64)
    return M @ M.mT + m * torch.eye(m, dtype=torch.float64)


@pytest.mark.parametrize("kw", [dict(), dict(k=2), dict(k=3, largest=False), dict(n=2),
                                dict(k=2, largest=True, niter=5, tol=1e-3, method="ortho")])
@pytest.mark.parametrize("generalized", [False, True])
def test_eigenpairs(kw, generalized):
    g = torch.Generator().manual_seed(1)
    A = _spd(g, 12)
    B = _spd(g, 12) if generalized else None
    kw_t = dict(kw, B=B) if B is not None else kw
    kw_e = dict(kw, B=E(B)) if B is not None else kw
    Et, Xt = torch.lobpcg(A, **{**kw_t, **({"niter": None, "tol": None} if "niter" in kw
                                          else {})})
    Ee, Xe = ember.lobpcg(E(A), **kw_e)
    assert tuple(Ee.shape) == tuple(Et.shape) and tuple(Xe.shape) == tuple(Xt.shape)
    np.testing.assert_allclose(Ee.numpy(), Et.numpy(), rtol=1e-9)
    np.testing.assert_allclose(np.abs(Xe.numpy()), np.abs(Xt.numpy()), atol=1e-6)
    # residual and B-orthonormality of ember's own vectors
    Bn = np.eye(12) if B is None else B.numpy()
    X, lam = Xe.numpy(), Ee.numpy()
    np.testing.assert_allclose(A.numpy() @ X, Bn @ X * lam, atol=1e-9)
    np.testing.assert_allclose(X.T @ Bn @ X, np.eye(X.shape[1]), atol=1e-9)


def test_initial_block_batched_and_dtype():
    g = torch.Generator().manual_seed(2)
    A = _spd(g, 12)
    X0 = torch.randn(12, 2, generator=g, dtype=torch.float64)
    for k in (None, 3, 1):
        Et, _ = torch.lobpcg(A, k=k, X=X0)
        Ee, _ = ember.lobpcg(E(A), k=k, X=E(X0))
        np.testing.assert_allclose(Ee.numpy(), Et.numpy(), rtol=1e-9)
    Ab = _spd(g, 9, 2)
    Et, Xt = torch.lobpcg(Ab, k=2)
    Ee, Xe = ember.lobpcg(E(Ab), k=2)
    np.testing.assert_allclose(Ee.numpy(), Et.numpy(), rtol=1e-9)
    assert tuple(Xe.shape) == tuple(Xt.shape) == (2, 9, 2)
    assert ember.lobpcg(E(A).float(), k=1)[0].dtype == ember.float32
    import warnings
    warnings.simplefilter("ignore", UserWarning)  # torch: sparse invariant checks disabled
    i = torch.tensor([[0, 1, 2, 0], [0, 1, 2, 2]])
    S = torch.sparse_coo_tensor(i, torch.tensor([5.0, 4.0, 3.0, 0.5], dtype=torch.float64),
                                (9, 9)).coalesce()
    S = (S + S.t() + torch.eye(9, dtype=torch.float64).to_sparse()).coalesce()
    Se = ember.sparse_coo_tensor(E(S.indices()), E(S.values()), (9, 9))
    np.testing.assert_allclose(ember.lobpcg(Se, k=2)[0].numpy(), torch.lobpcg(S, k=2)[0].numpy(),
                               rtol=1e-9)


def test_block_size_error():
    g = torch.Generator().manual_seed(3)
    A = _spd(g, 5)
    with pytest.raises(ValueError) as t:
        torch.lobpcg(A, k=2)
    with pytest.raises(ValueError) as e:
        ember.lobpcg(E(A), k=2)
    assert str(e.value) == str(t.value)


def test_eigenvalue_gradient():
    g = torch.Generator().manual_seed(4)
    A = _spd(g, 12)
    At = A.clone().requires_grad_()
    Ae = E(A).requires_grad_()
    w = torch.tensor([1.0, -2.0], dtype=torch.float64)
    (torch.lobpcg(At, k=2)[0] * w).sum().backward()
    (ember.lobpcg(Ae, k=2)[0] * E(w)).sum().backward()
    np.testing.assert_allclose(Ae.grad.numpy(), At.grad.numpy(), atol=1e-6)
