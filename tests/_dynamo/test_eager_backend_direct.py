"""The "eager" backend calls the NumPy ufunc an elementwise kernel would call, where the
graph's dtypes make that the same arithmetic (issue 18: the eager backend's replay cost).
Results must be bit-identical to eager mode, special values included."""
import numpy as np
import pytest

import ember


@pytest.fixture(autouse=True)
def _fresh_caches():
    ember._dynamo.reset()
    yield


def _source(compiled):
    (entry,) = compiled.cache.entries.values()
    return entry.run.__ember_source__


def _special(dtype):
    return ember.from_numpy(np.array([0.5, -0.0, 0.0, np.inf, -np.inf, np.nan, 1e-30, -3.25,
                                      1e30, 7.0, -1.0, 2.0], dtype=dtype))


def _chain(x):
    y = x * 1.01 + 0.5
    y = (1.0 - y).sin().relu()
    y = y / 3 - x
    return (2.5 * y).tanh().exp() + y * y


def _assert_bitwise(a, b):
    a, b = np.atleast_1d(a.numpy()), np.atleast_1d(b.numpy())
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_chain_calls_ufuncs_and_matches_eager_bitwise(dtype):
    x = _special(dtype)
    f = ember.compile(_chain, backend="eager")
    for _ in range(3):  # captured calls and replays
        with np.errstate(all="ignore"):
            _assert_bitwise(f(x), _chain(x))
    src = _source(f)
    assert "_u_mul" in src and "_u_sin" in src and "_u_sub" in src, src
    # relu is a C loop now (ckernels.selection), called as its kernel, not a ufunc
    assert "_k_relu(" in src, src


@pytest.mark.parametrize("make", [
    lambda: ember.tensor(1.5),                                    # 0-d: NumPy scalars
    lambda: ember.arange(6, dtype=ember.int64),                   # integers
    lambda: ember.arange(6, dtype=ember.float16) / 7,             # halves via float32
])
def test_other_dtypes_keep_their_kernels(make):
    def f(x):
        return (x * 3 + 1) * x

    x = make()
    cf = ember.compile(f, backend="eager")
    for _ in range(3):
        _assert_bitwise(cf(x), f(x))
    assert "_u_" not in _source(cf)


def test_mixed_dtypes_and_large_numbers_keep_their_kernels():
    a = ember.arange(4, dtype=ember.float32) + 0.25
    b = ember.arange(4, dtype=ember.float64) + 0.5

    def f(x, y):
        return x * y + x * 2 ** 40

    cf = ember.compile(f, backend="eager")
    for _ in range(3):
        _assert_bitwise(cf(a, b), f(a, b))
    src = _source(cf)
    assert "_k_mul(" in src


def test_replayed_chain_reads_each_new_input():
    f = ember.compile(_chain, backend="eager")
    for i in range(5):
        x = ember.arange(8, dtype=ember.float32) * (i + 1) - 3
        _assert_bitwise(f(x), _chain(x))
    assert f.cache.replay_plan is not None and f.cache.replay_plan.hits == 4
