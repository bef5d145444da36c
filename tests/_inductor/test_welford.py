"""var/std/var_mean and layer_norm's statistics: one Welford pass over each row (blocks
merged by Chan's update), equal to NumPy's two-pass float64 results (issue 11).  Most
tests lower ``config.welford_min_row`` to 0 so that short rows take the one-pass form."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._inductor import config
from ember._inductor.codegen.welford import BLOCK

from ember._inductor import compile_fx
from ember._inductor.passes.record import record_graph

from .helpers import compile_fn, rand
from .test_dynamic_shapes import _symbolize


def _compiled(fn, *inputs):
    c, _ = compile_fn(fn, *inputs)
    assert c.reason is None, c.reason
    return c


@pytest.fixture
def every_row(monkeypatch):
    monkeypatch.setattr(config, "welford_min_row", 0)


def _needs_c():
    from ember._inductor.build import compiler_available
    # the one-pass form is generated C; the NumPy kernels compute var in two passes
    assert compiler_available(config.cc), "no C compiler found"


@pytest.mark.parametrize("cols", [1, 7, BLOCK, BLOCK + 1, 3 * BLOCK + 5, 1000])
@pytest.mark.parametrize("correction", [0, 1])
def test_row_variance_is_one_pass_and_equals_numpy(cols, correction, every_row):
    _needs_c()
    rng = np.random.default_rng(cols)
    # an offset far larger than the spread: a naive sum-of-squares form would lose it
    a = (1e3 + rng.standard_normal((5, cols))).astype(np.float32)
    x = ember.from_numpy(a)
    with warnings.catch_warnings():  # eager warns when no degrees of freedom are left
        warnings.simplefilter("ignore", UserWarning)
        c = _compiled(lambda x: (x.var(-1, correction=correction), x.mean(-1)), x)
        eager_var = x.var(-1, correction=correction).numpy()
    assert "wsum" in c.source  # the Welford pass
    var, mean = c(x)
    ref = a.astype(np.float64)
    np.testing.assert_allclose(mean.numpy(), ref.mean(-1), rtol=1e-6)
    if cols > correction:
        np.testing.assert_allclose(var.numpy(), ref.var(-1, ddof=correction), rtol=2e-3,
                                   atol=1e-6)
    else:  # no degrees of freedom left: what eager gives (0 / 0)
        np.testing.assert_array_equal(np.isnan(var.numpy()), np.isnan(eager_var))


def test_float64_std_and_var_mean_equal_numpy(every_row):
    _needs_c()
    a = np.random.default_rng(1).standard_normal((6, 300)) * 3 + 5
    x = ember.from_numpy(a)
    c = _compiled(lambda x: (x.std(-1), *ember.var_mean(x, -1, keepdim=True)), x)
    assert "wsum" in c.source
    std, var, mean = c(x)
    np.testing.assert_allclose(std.numpy(), a.std(-1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), a.var(-1, ddof=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(mean.numpy(), a.mean(-1, keepdims=True), rtol=1e-12)


def test_layer_norm_statistics_in_one_pass_equal_torch(every_row):
    _needs_c()
    import torch
    x, w, b = rand(8, 520), rand(520, seed=1), rand(520, seed=2)
    c = _compiled(lambda x, w, b: F.layer_norm(x, (520,), w, b), x, w, b)
    assert "wsum" in c.source and c.kernel_count == 1
    got = c(x, w, b)[0].numpy()
    tx, tw, tb = (torch.from_numpy(t.numpy()) for t in (x, w, b))
    want = torch.nn.functional.layer_norm(tx, (520,), tw, tb).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_symbolic_row_length(every_row):
    _needs_c()
    x = rand(3, 200, dtype=ember.float64)
    gm, _ = record_graph(lambda x: x.var(-1), x)
    _symbolize(gm, {200: "s0"})
    c = compile_fx(gm, [x])
    assert c.reason is None and "wsum" in c.source
    for cols in (200, 5, 1 + 2 * BLOCK):
        a = np.random.default_rng(cols).standard_normal((3, cols))
        got = c(ember.from_numpy(a))[0].numpy()
        np.testing.assert_allclose(got, a.var(-1, ddof=1), rtol=1e-12)


def test_whole_tensor_and_column_variances_keep_two_passes(every_row):
    x = rand(64, 33, dtype=ember.float64)
    for fn in (lambda x: x.var(), lambda x: x.var(0)):
        c = _compiled(fn, x)
        assert "wsum" not in c.source
        np.testing.assert_allclose(c(x)[0].numpy(), fn(x).numpy(), rtol=1e-12)


def test_by_default_only_long_rows_take_one_pass():
    _needs_c()
    short = rand(4, 256, dtype=ember.float64)
    assert "wsum" not in _compiled(lambda x: x.var(-1), short).source
    a = np.random.default_rng(3).standard_normal((2, config.welford_min_row + 3)) + 50
    long = ember.from_numpy(a)
    c = _compiled(lambda x: x.var(-1), long)
    assert "wsum" in c.source
    np.testing.assert_allclose(c(long)[0].numpy(), a.var(-1, ddof=1), rtol=1e-12)
