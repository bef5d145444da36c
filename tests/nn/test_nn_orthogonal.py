"""nn.utils.parametrizations.orthogonal: weights, gradients of the originals, assignment and
errors vs torch (same seed: the completion of non-square bases draws the same randn)."""
import warnings

import numpy as np
import pytest
import torch

import ember

W0 = {s: np.random.default_rng(1).standard_normal(s) for s in ((4, 4), (5, 3), (3, 5))}
X0 = np.random.default_rng(2).standard_normal((2, 5))


def _run(L, shape, kind, triv):
    L.manual_seed(0)
    lin = L.nn.Linear(shape[1], shape[0], bias=False)
    with L.no_grad():
        lin.weight.copy_(L.tensor(W0[shape], dtype=L.float32))
    L.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=kind, use_trivialization=triv)
    y = lin(L.tensor(X0[:, :shape[1]], dtype=L.float32))
    y.pow(2).sum().backward()
    W = lin.weight.detach()
    return W.numpy(), lin.parametrizations.weight.original.grad.numpy(), lin


@pytest.mark.parametrize("shape,kind,triv", [
    ((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True), ((4, 4), "cayley", True),
    ((5, 3), "householder", False), ((5, 3), "matrix_exp", True), ((3, 5), "householder", True),
    ((4, 4), "householder", False), ((4, 4), "matrix_exp", False), ((5, 3), "cayley", False)])
def test_weights_and_grads(shape, kind, triv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _run(torch, shape, kind, triv)
        e = _run(ember, shape, kind, triv)
    np.testing.assert_allclose(e[0], t[0], atol=1e-5)
    np.testing.assert_allclose(e[1], t[1], atol=1e-4)
    k = min(shape)
    gram = e[0] @ e[0].T if shape[0] < shape[1] else e[0].T @ e[0]
    np.testing.assert_allclose(gram, np.eye(k), atol=1e-5)


def test_assigning_an_orthogonal_matrix():
    q = np.linalg.qr(np.random.default_rng(3).standard_normal((4, 4)))[0]
    for L in (torch, ember):
        lin = L.nn.utils.parametrizations.orthogonal(L.nn.Linear(4, 4))
        with L.no_grad():
            lin.weight = L.tensor(q, dtype=L.float32)
        np.testing.assert_allclose(lin.weight.detach().numpy(), q, atol=1e-5)
        np.testing.assert_allclose(lin.parametrizations.weight.original.detach().numpy(),
                                   -np.eye(4), atol=0)


@pytest.mark.parametrize("call", [
    lambda L: L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 3), "bias"),
    lambda L: L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 3), "nope"),
    lambda L: L.nn.utils.parametrizations.orthogonal(L.nn.Linear(3, 3), orthogonal_map="qr"),
    lambda L: L.nn.utils.parametrizations.orthogonal(
        L.nn.Linear(3, 3).to(L.complex64), orthogonal_map="householder"),
])
@pytest.mark.filterwarnings("ignore:Complex modules are a new feature")
def test_errors(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)):
        call(ember)
