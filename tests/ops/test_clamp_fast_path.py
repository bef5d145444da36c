"""clamp with scalar bounds runs on np.clip's SIMD loop: bit for bit torch's clamp at NaNs,
infinities, signed zeros and crossed bounds, for every bound combination; tensor bounds keep the
elementwise path (equal values and signed zeros)."""
import itertools

import numpy as np
import pytest
import torch

import ember

_SPECIALS = [np.nan, -np.inf, np.inf, -0.0, 0.0, -1.5, -1.0, 1.0, 2.0, 0.5, 1e-40, -1e-40]
_BOUNDS = list(itertools.product([None, 0.0, -0.0, -1.0, np.nan, 2.0, np.inf, -np.inf, 1],
                                 [None, 0.0, -0.0, 1.0, np.nan, np.inf, -np.inf, -2]))


def _bits(a):
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_bounds_bitwise_torch(dtype):
    x = np.random.default_rng(0).choice(_SPECIALS, 5000).astype(dtype)
    for lo, hi in _BOUNDS:
        if lo is None and hi is None:
            continue
        got = ember.clamp(ember.from_numpy(x), lo, hi).numpy()
        want = torch.clamp(torch.from_numpy(x), lo, hi).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=f"{lo}, {hi}")


def test_tensor_bounds_and_half_bitwise_torch():
    rng = np.random.default_rng(1)
    x = rng.choice(_SPECIALS, 4000).astype(np.float32)
    lo = rng.choice(_SPECIALS, 4000).astype(np.float32)
    hi = rng.choice(_SPECIALS, 4000).astype(np.float32)
    got = ember.clamp(ember.from_numpy(x), ember.from_numpy(lo), ember.from_numpy(hi)).numpy()
    want = torch.clamp(torch.from_numpy(x), torch.from_numpy(lo), torch.from_numpy(hi)).numpy()
    # values and signed zeros equal; a NaN's sign bit may differ on this path
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))
    xh = x.astype(np.float16)
    got = ember.from_numpy(xh).clamp(-0.0, 1.0).numpy()
    want = torch.from_numpy(xh).clamp(-0.0, 1.0).numpy()
    np.testing.assert_array_equal(got.view(np.int16), want.view(np.int16))


def test_integer_input_float_bound_promotes_as_torch():
    x = np.arange(-5, 5)
    got = ember.clamp(ember.from_numpy(x), min=-1.5)
    want = torch.clamp(torch.from_numpy(x), min=-1.5)
    assert str(got.dtype).split('.')[-1] == str(want.dtype).split('.')[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
