"""pow of float tensors by the scalar exponents torch computes as products or reciprocals
(2, 3, -1, -2, -0.5) or as a copy / ones (1, 0): bit for bit torch, specials included, with
the gradient of x ** 2 and the in-place form."""
import numpy as np
import pytest
import torch

import ember

_EXPONENTS = [2, 3, -1, -2, -0.5, 1, 0, 2.0, 3.0, -1.0]


def _data(dtype):
    rng = np.random.default_rng(0)
    return np.concatenate([rng.standard_normal(5000) * 10, rng.uniform(0, 1e-3, 500),
                           [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40]]).astype(dtype)


def _same(got, want):
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # NaN where torch has NaN
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", _EXPONENTS)
def test_bitwise_torch(dtype, exponent):
    x = _data(dtype)
    _same(ember.pow(ember.from_numpy(x), exponent).numpy(),
          torch.pow(torch.from_numpy(x), exponent).numpy())
    _same((ember.from_numpy(x) ** exponent).numpy(), (torch.from_numpy(x) ** exponent).numpy())


def test_result_is_new_memory_and_inplace_matches():
    x = _data(np.float32)
    t = ember.from_numpy(x.copy())
    r = t.pow(1)
    r[0] = 123.0
    assert t[0].item() != 123.0
    t.pow_(3)
    want = torch.from_numpy(x.copy())
    want.pow_(3)
    _same(t.numpy(), want.numpy())


def test_gradient_of_square_and_cube():
    x = np.random.default_rng(1).standard_normal(1000)
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        (t ** 2 + t ** 3 + t ** -2).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-14)
