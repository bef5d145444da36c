"""torch.special's orthogonal polynomials and logsumexp, against torch."""
import numpy as np
import pytest
import torch

import ember
from ember.special._polynomials import __all__ as POLYNOMIALS


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_torch(name):
    rs = np.random.RandomState(0)
    x = rs.uniform(-1.2, 1.2, size=(4, 5)).astype(np.float32)
    if name.startswith("shifted"):
        x = (x + 1.2) / 2.4
    n = np.array([0, 1, 2, 3, 6], dtype=np.int64)
    for nn in (n, 4, -1, 2.7):
        tn = torch.tensor(nn) if isinstance(nn, np.ndarray) else nn
        en = ember.tensor(nn) if isinstance(nn, np.ndarray) else nn
        t = getattr(torch.special, name)(torch.tensor(x), tn)
        e = getattr(ember.special, name)(ember.tensor(x), en)
        assert e.dtype is ember.float32 and str(t.dtype) == "torch.float32"
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-5, atol=2e-5)
    # scalar input, tensor degree; integer input gives the default float dtype
    t = getattr(torch.special, name)(0.25, torch.tensor([1, 3]))
    e = getattr(ember.special, name)(0.25, ember.tensor([1, 3]))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    t = getattr(torch.special, name)(torch.tensor([1, 2]), 2)
    e = getattr(ember.special, name)(ember.tensor([1, 2]), 2)
    assert e.dtype is ember.float32 and str(t.dtype) == "torch.float32"
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_polynomials_have_no_gradient_like_torch():
    for lib in (torch, ember):
        x = lib.tensor([0.5], requires_grad=True)
        assert not lib.special.chebyshev_polynomial_t(x, 3).requires_grad


def test_special_logsumexp_matches_torch():
    a = np.random.RandomState(1).randn(3, 4).astype(np.float32)
    for dim, keep in ((0, False), (1, True), ((0, 1), False)):
        np.testing.assert_allclose(ember.special.logsumexp(ember.tensor(a), dim, keep).numpy(),
                                   torch.special.logsumexp(torch.tensor(a), dim, keep).numpy(),
                                   rtol=1e-5, atol=1e-6)


_GATE_DTYPES = ("bool", "int32", "float16", "bfloat16", "float32", "float64", "complex64")


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_refuse_half_and_complex_computations_as_torch(name):
    # torch's kernels are float32/float64 only, judged on the promoted dtype of input and n
    # (bfloat16 with float16 promotes to float32 and computes)
    for xd in _GATE_DTYPES:
        for nd in ("int64", "float16", "bool", "complex64"):
            def call(lib):
                return getattr(lib.special, name)(lib.ones(3, dtype=getattr(lib, xd)),
                                                  lib.full((3,), 2, dtype=getattr(lib, nd)))
            try:
                t = call(torch)
            except NotImplementedError as exc:
                with pytest.raises(NotImplementedError, match=str(exc).split(" for ")[1]):
                    call(ember)
                continue
            e = call(ember)
            assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
