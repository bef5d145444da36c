"""Column reductions (over the outer dims, keeping the last) with no other outer loop split
the kept dim over threads: each thread reduces whole rows of its columns.  Forced on
(``parallel_min_work=0``) at sizes that leave ragged and empty chunks; the results equal
eager and torch."""
import numpy as np
import pytest

import ember

from .helpers import check, compile_fn, rand, to_torch

PAR = {"parallel_min_work": 0}


@pytest.mark.parametrize("cols", [1, 7, 16, 33, 100, 1024])
def test_column_sum_and_friends(cols):
    x, g = rand(37, cols), rand(37, cols, seed=1)
    c = check(lambda x, g: ((g * x.sigmoid()).sum(0), x.amax(0), x.amin(0),
                            (x * 0.1).exp().prod(0), (x > 0).any(0), (x > -2).all(0)),
              x, g, options=PAR)
    assert "clo" in c.source, c.source


def test_column_mean_var_and_centered_rows():
    # the stores of the whole input (x - mean) run per chunk of columns too
    x = rand(50, 70, seed=2)
    check(lambda x: (x.var(0), x - x.mean(0), x.std(0, keepdim=True)), x, options=PAR)


def test_column_nan_propagates():
    x = rand(20, 40, seed=3)
    x._data[5, 17] = np.nan
    c, _ = compile_fn(lambda x: (x.amax(0), x.amin(0), x.sum(0)), x, options=PAR)
    for out in c(x):
        v = out.numpy()
        assert np.isnan(v[17]) and not np.isnan(np.delete(v, 17)).any()


def test_column_int_and_half():
    xi = ember.from_numpy(np.arange(30 * 21).reshape(30, 21) % 17)
    check(lambda x: (x.sum(0), x.amax(0)), xi, options=PAR)
    xb = rand(30, 21, seed=4, dtype=ember.bfloat16)
    check(lambda x: (x.float().sum(0), x.amax(0)), xb, options=PAR)


def test_large_column_sum_matches_torch():
    x = rand(4096, 1024, seed=5)
    c, _ = compile_fn(lambda x: (x.sum(0), x.mean(0)), x, options=PAR)
    s, m = c(x)
    t = to_torch(x)
    np.testing.assert_allclose(s.numpy(), t.sum(0).numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(m.numpy(), t.mean(0).numpy(), rtol=1e-4, atol=1e-6)


def test_column_with_outer_loop_keeps_its_outer_split():
    # (B, R, C).sum(1): parallel over B as before, no column chunks
    x = rand(3, 20, 40, seed=6)
    c = check(lambda x: x.sum(1), x, options=PAR)
    assert "clo" not in c.source
