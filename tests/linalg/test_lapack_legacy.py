"""torch.lu/lu_solve/geqrf/orgqr/ormqr and their Tensor methods: values, gradients and errors
vs torch."""
import warnings

import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(5)
A = rng.standard_normal((2, 5, 3))
X = rng.standard_normal((2, 5, 2))
SQ = rng.standard_normal((2, 3, 3))
B = rng.standard_normal((2, 3, 2))


def _both(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(torch), fn(ember)


def _close(t, e):
    if isinstance(t, (tuple, list)):
        assert len(t) == len(e)
        for a, b in zip(t, e):
            _close(a, b)
        return
    assert str(t.dtype).split(".")[1] == str(e.dtype).split(".")[1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_geqrf_orgqr():
    _close(*_both(lambda L: L.geqrf(L.tensor(A))))
    _close(*_both(lambda L: L.tensor(A[0]).geqrf()))
    _close(*_both(lambda L: L.orgqr(*L.geqrf(L.tensor(A)))))
    _close(*_both(lambda L: L.geqrf(L.tensor(A[..., :0]))))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_values_and_grads(left, transpose):
    grads = []
    for L in (torch, ember):
        a, tau = L.geqrf(L.tensor(A))
        a.requires_grad_()
        other = L.tensor(X if left else X.swapaxes(-1, -2).copy(), requires_grad=True)
        r = L.ormqr(a, tau, other, left=left, transpose=transpose)
        r2 = a.ormqr(tau, other, left=left, transpose=transpose)
        (r * r2.detach()).sum().backward()
        grads.append((r, a.grad, other.grad))
    _close(*grads)


def test_lu_warns_once_like_torch():
    for L in (torch, ember):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.lu(L.eye(2))
        assert any("torch.lu is deprecated" in str(x.message) for x in w)


def test_lu_and_lu_solve():
    _close(*_both(lambda L: L.lu(L.tensor(SQ))))
    _close(*_both(lambda L: L.tensor(SQ).lu(get_infos=True)))
    _close(*_both(lambda L: L.lu(L.tensor(SQ), pivot=True, get_infos=True)))
    _close(*_both(lambda L: L.lu_solve(L.tensor(B), *L.lu(L.tensor(SQ)))))
    _close(*_both(lambda L: L.tensor(B).lu_solve(*L.tensor(SQ).lu())))
    singular = np.zeros((3, 3))
    _close(*_both(lambda L: L.lu(L.tensor(singular), get_infos=True)[2]))


@pytest.mark.parametrize("call", [
    lambda L: L.geqrf(L.ones(3)),
    lambda L: L.geqrf(L.ones(3, 2, requires_grad=True))[0].sum().backward(),
    lambda L: L.ormqr(L.ones(4, 2), L.ones(2), L.ones(3, 2)),
    lambda L: L.lu(L.zeros(3)),
])
def test_errors(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)):
        call(ember)
