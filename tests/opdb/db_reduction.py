"""Reductions and cumulative ops: sum, mean, prod, max/min, amax/amin, var/std, norm, ..."""
import math

import numpy as np

from .core import ALL_NUMERIC, FLOATS, HALVES, INTS, OpInfo, SampleInput as S, make, np_dtype

NAN, INF = math.nan, math.inf
FH = FLOATS + HALVES
NUM = INTS + FH          # no bool
REAL_ALL = ALL_NUMERIC


def arr(values, dtype):
    return np.array(values).astype(np_dtype(dtype))


def reduce_samples(*, tuple_dims=True, empty_all=True, empty_reduced=True, low=None, high=None,
                   kw=None, dim_kw="dim"):
    """Whole-tensor and per-dim reductions: dims, negative dims, keepdim, tuples, 0-d,
    non-contiguous and zero-size inputs.  The first sample suits gradcheck."""
    kw = kw or {}

    def gen(dtype, rng):
        def m(shape, **k):
            return make(shape, dtype, rng, low=low, high=high, **k)
        yield S((m((3, 4)),), dict(kw), "all")
        yield S((m((3, 4)),), {dim_kw: 1, **kw}, "dim1")
        yield S((m((2, 3, 4)),), {dim_kw: -1, "keepdim": True, **kw}, "dim-1-keep")
        yield S((m((2, 3, 4), noncontig=True),), {dim_kw: 0, **kw}, "noncontig")
        yield S((m(()),), {dim_kw: 0, **kw}, "0d-dim")
        yield S((m(()),), dict(kw), "0d")
        yield S((m((0, 3)),), {dim_kw: 1, **kw}, "empty-kept")
        if empty_reduced:
            yield S((m((0, 3)),), {dim_kw: 0, **kw}, "empty-reduced")
        if empty_all:
            yield S((m((0, 3)),), dict(kw), "empty")
        if tuple_dims:
            yield S((m((2, 3, 4)),), {dim_kw: (0, 2), **kw}, "tuple")
            yield S((m((2, 3, 4)),), {dim_kw: (-1, 0), "keepdim": True, **kw}, "tuple-keep")
    return gen


def with_extra(gen, extra):
    """``gen``'s samples followed by ``extra(dtype)``'s."""
    def g(dtype, rng):
        yield from gen(dtype, rng)
        yield from extra(dtype, rng)
    return g


def _float_only(fn):
    def g(dtype, rng):
        if np_dtype(dtype).kind in "fV":
            yield from fn(dtype, rng)
    return g


@_float_only
def _nan_samples(dtype, rng):
    yield S((arr([[1, NAN, 3], [NAN, NAN, 2]], dtype),), {}, "nan-all")
    yield S((arr([[1, NAN, 3], [NAN, NAN, 2]], dtype),), {"dim": 1}, "nan-dim")


@_float_only
def _tie_samples(dtype, rng):
    yield S((arr([[1, 3, 3], [2, 0, 2]], dtype),), {}, "ties-all")
    yield S((arr([[1, 3, 3], [2, 0, 2]], dtype),), {"dim": 1}, "ties-dim")


def _prod_samples(dtype, rng):
    yield S((make((3, 4), dtype, rng, low=-2, high=2),), {}, "all")
    yield S((make((3, 4), dtype, rng, low=-2, high=2),), {"dim": 1}, "dim")
    yield S((make((2, 3, 4), dtype, rng, low=-2, high=2, noncontig=True),),
            {"dim": -1, "keepdim": True}, "noncontig-keep")
    yield S((make((), dtype, rng),), {}, "0d")
    yield S((make((0, 3), dtype, rng),), {}, "empty")
    yield S((make((0, 3), dtype, rng),), {"dim": 0}, "empty-dim")
    yield S((arr([[2, 0, 3], [0, 0, 1], [1, 2, 3]], dtype),), {"dim": 1}, "zeros")
    yield S((arr([2, 0, 3], dtype),), {}, "one-zero")
    yield S((make((3, 4), dtype, rng, low=-2, high=2),), {"dtype": "float64"}, "dtype")


def _with_dtype(name):
    def fn(lib, *args, **kw):
        if "dtype" in kw:
            kw["dtype"] = getattr(lib, kw["dtype"])
        return getattr(lib, name)(*args, **kw)
    return fn


def _cum_samples(low=None, high=None, empty=True):
    def gen(dtype, rng):
        def m(shape, **k):
            return make(shape, dtype, rng, low=low, high=high, **k)
        yield S((m((3, 4)),), {"dim": 1}, "dim1")
        yield S((m((3, 4)),), {"dim": 0}, "dim0")
        yield S((m((2, 3, 4), noncontig=True),), {"dim": -1}, "noncontig")
        yield S((m(()),), {"dim": 0}, "0d")
        if empty:
            yield S((m((0, 3)),), {"dim": 0}, "empty")
        yield S((m((5,)),), {"dim": -1}, "1d")
    return gen


def _cumprod_zero_samples(dtype, rng):
    yield S((arr([2, 0, 3, 0, 4], dtype),), {"dim": 0}, "zeros")
    yield S((arr([[2, 1.5, 0, 3], [0, 1, 2, 0.5], [1, 2, 3, 0]], dtype),), {"dim": 1}, "rows")
    yield S((arr([[2, 1.5, 0, 3], [0, 1, 2, 0.5], [1, 2, 3, 0]], dtype),), {"dim": 0}, "cols")


@_float_only
def _cumext_nan(dtype, rng):
    yield S((arr([1, NAN, 3, NAN, 0], dtype),), {"dim": 0}, "nan")


def _cumext_ties(dtype, rng):
    yield S((make((4, 6), dtype, rng, low=0, high=3),), {"dim": 1}, "ties")


def _lse_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, **k)
    yield S((m((3, 4)),), {"dim": 1}, "dim1")
    yield S((m((2, 3, 4)),), {"dim": (0, 2), "keepdim": True}, "tuple-keep")
    yield S((m((2, 3, 4), noncontig=True),), {"dim": -1}, "noncontig")
    yield S((m(()),), {"dim": 0}, "0d")
    yield S((m((0, 3)),), {"dim": 0}, "empty-reduced")
    yield S((m((0, 3)),), {"dim": 1}, "empty-kept")
    if np_dtype(dtype).kind in "fV":
        yield S((arr([[-INF, -INF], [INF, 1], [-INF, 0], [1000, 1000]], dtype),), {"dim": 1},
                "infs")


def _lcse_samples(dtype, rng):
    yield from _cum_samples()(dtype, rng)
    yield S((arr([-INF, 0, -INF, 50, 1000], dtype),), {"dim": 0}, "infs")


def _var_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, **k)
    yield S((m((3, 4)),), {}, "all")
    yield S((m((3, 4)),), {"dim": 1, "correction": 0}, "dim-corr0")
    yield S((m((2, 3, 4)),), {"dim": (0, 2), "keepdim": True}, "tuple-keep")
    yield S((m((2, 3, 4), noncontig=True),), {"dim": -1, "correction": 2}, "noncontig-corr2")
    yield S((m((3, 4)), 1, False, True), {}, "legacy-dim-unbiased-keepdim")
    yield S((m((3, 4)), False), {}, "legacy-unbiased")
    yield S((m((3, 4)),), {"unbiased": False}, "unbiased-kw")
    yield S((m((3, 4)),), {"dim": None, "keepdim": True}, "none-keep")
    yield S((m((3, 1)),), {"dim": 1}, "single")
    yield S((m(()),), {}, "0d")
    yield S((m((0, 3)),), {"dim": 0}, "empty")
    yield S((m((2, 5)),), {"dim": 1, "correction": 7}, "dof-negative")
    yield S((arr([[1, 1, 1], [1, 2, 3]], dtype),), {"dim": 1}, "constant-row")


def _norm_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, **k)
    yield S((m((3, 4)),), {}, "fro")
    yield S((m((3, 4)), 2, 1), {}, "p2-dim")
    yield S((m((3, 4)), 1), {"dim": 0, "keepdim": True}, "p1")
    yield S((m((3, 4)), INF, 1), {}, "inf")
    yield S((m((3, 4)), -INF), {}, "-inf")
    yield S((m((3, 4)), 0, 1), {}, "p0")
    yield S((m((2, 3, 4)), 3, (0, 2)), {}, "p3-tuple")
    yield S((m((3, 4), exclude_zero=True), 0.5), {}, "p0.5")
    yield S((m((3, 4)), -1.5, 1), {}, "p-1.5")
    yield S((m((2, 3, 4), noncontig=True), "fro", (1, 2)), {}, "fro-dims")
    yield S((m((2, 3, 4)), "fro", -1), {}, "fro-dim")
    yield S((m((3, 4)), "nuc"), {}, "nuc")
    yield S((m((2, 3, 4)), "nuc", (1, 2)), {"keepdim": True}, "nuc-batched")
    yield S((m(()),), {}, "0d")
    yield S((m((0, 3)),), {}, "empty")
    yield S((m((0, 3)), INF, 0), {}, "empty-inf")
    yield S((arr([[0, 0], [3, 4]], dtype), 2, 1), {}, "zero-row")
    yield S((arr([[1, -3, 3], [2, 0, -2]], dtype), INF, 1), {}, "inf-ties")


def _norm_fn(lib, *args, **kw):
    if "dtype" in kw:
        kw["dtype"] = getattr(lib, kw["dtype"])
    return lib.norm(*args, **kw)


def _norm_errors(rng):
    x = make((3, 4), "float32", rng)
    yield S((make((3,), "int64", rng),), {}), RuntimeError
    yield S((x, "foo"), {}), RuntimeError
    yield S((make((2, 3, 4), "float32", rng), "fro", (0, 1, 2)), {}), RuntimeError
    yield S((x,), {"dtype": "float16"}), RuntimeError


def _extreme_samples(dtype, rng):
    yield from reduce_samples(tuple_dims=False, empty_all=True)(dtype, rng)
    yield from _nan_samples(dtype, rng)
    yield from _tie_samples(dtype, rng)
    if np_dtype(dtype).kind in "iub":
        yield S((make((4, 5), dtype, rng, low=0, high=3),), {"dim": 1}, "int-ties")


def _binary_extreme(dtype, rng):
    yield S((make((3, 4), dtype, rng), make((3, 4), dtype, rng)), {}, "binary")
    yield S((make((3, 1), dtype, rng), make((4,), dtype, rng)), {}, "binary-broadcast")


def _amax_samples(dtype, rng):
    yield from reduce_samples()(dtype, rng)
    yield from _nan_samples(dtype, rng)
    yield from _tie_samples(dtype, rng)
    if np_dtype(dtype).kind in "fV":
        yield S((arr([[1, 3, 3], [2, 0, 2]], dtype),), {"dim": (0, 1)}, "ties-tuple")


def _aminmax_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, **k)
    yield S((m((3, 4)),), {}, "all")
    yield S((m((3, 4)),), {"dim": 1}, "dim")
    yield S((m((2, 3, 4), noncontig=True),), {"dim": -1, "keepdim": True}, "keep")
    yield S((m(()),), {}, "0d")
    yield S((m((0, 3)),), {}, "empty")
    yield S((m((0, 3)),), {"dim": 1}, "empty-kept")
    yield from _tie_samples(dtype, rng)


def _arg_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, **k)
    yield S((m((3, 4)),), {}, "all")
    yield S((m((3, 4)),), {"dim": 1}, "dim")
    yield S((m((3, 4)),), {"dim": -2, "keepdim": True}, "dim-keep")
    yield S((m((3, 4)),), {"keepdim": True}, "none-keep")
    yield S((m((2, 3, 4), noncontig=True),), {"dim": 2}, "noncontig")
    yield S((m(()),), {}, "0d")
    yield S((m(()),), {"dim": 0}, "0d-dim")
    yield S((m((0, 3)),), {}, "empty")
    yield S((m((0, 3)),), {"dim": 0}, "empty-reduced")
    yield S((m((0, 3)),), {"dim": 1}, "empty-kept")
    yield S((make((4, 5), dtype, rng, low=0, high=3),), {"dim": 1}, "ties")
    yield from _nan_samples(dtype, rng)


def _nan_reduce(dtype, rng):
    yield from reduce_samples()(dtype, rng)
    yield from _nan_samples(dtype, rng)
    yield S((make((3, 4), dtype, rng),), {"dim": 1, "dtype": "float64"}, "dtype")


def _dtype_sample(dtype, rng):
    if dtype != "complex128":
        yield S((make((3, 4), dtype, rng),), {"dim": 1, "dtype": "float64"}, "dtype")
    yield S((make((3, 4), dtype, rng),), {"dim": []}, "dim-empty-list")


def _dim_samples(dtype, rng):
    yield S((make((3, 4), dtype, rng),), {"dim": 1}, "dim")
    yield S((make((2, 3, 4), dtype, rng),), {"dim": (0, 2), "keepdim": True}, "tuple-keep")


def _out(name, dtype_of_out=None):
    """``lib.<name>(..., out=...)`` with an empty out tensor (resized as torch does)."""
    def fn(lib, x, *args, **kw):
        o = lib.empty(0, dtype=getattr(lib, dtype_of_out) if dtype_of_out else x.dtype)
        r = getattr(lib, name)(x, *args, out=o, **kw)
        assert r is o
        return o
    return fn


def _inplace(name):
    def fn(lib, x, *args, **kw):
        y = x.clone()
        r = getattr(y, name + "_")(*args, **kw)
        assert r is y
        return y
    return fn


def _max_out(lib, x, dim):
    v, i = lib.empty(0, dtype=x.dtype), lib.empty(0, dtype=lib.int64)
    r = lib.max(x, dim, out=(v, i))
    assert r[0] is v and r[1] is i
    return v, i


OPS = [
    OpInfo("sum", fn=_with_dtype("sum"), samples=with_extra(reduce_samples(), _dtype_sample),
           dtypes=REAL_ALL + ("complex128",)),
    OpInfo("Tensor.sum", samples=reduce_samples(), dtypes=FLOATS),
    OpInfo("sum_out", fn=_out("sum"), samples=_dim_samples, dtypes=FLOATS + ("int64",),
           grad=False),
    OpInfo("mean_out", fn=_out("mean"), samples=_dim_samples, dtypes=FLOATS, grad=False),
    OpInfo("mean", fn=_with_dtype("mean"), samples=with_extra(reduce_samples(), _dtype_sample),
           dtypes=FH + ("int64", "complex128")),
    OpInfo("nansum", fn=_with_dtype("nansum"), samples=_nan_reduce, dtypes=REAL_ALL),
    OpInfo("nanmean", fn=_with_dtype("nanmean"), samples=_nan_reduce, dtypes=FH + ("int64",)),
    OpInfo("prod", fn=_with_dtype("prod"), samples=_prod_samples, dtypes=REAL_ALL),
    OpInfo("prod_zeros", fn=lambda lib, x, **kw: lib.prod(x, **kw),
           samples=lambda d, r: [S((arr([[2, 0, 3], [0, 0, 1], [1.5, 2, 3]], d),), {"dim": 1}),
                                 S((arr([2, 0, 3.5], d),), {})], dtypes=FLOATS),
    OpInfo("max", samples=_extreme_samples, dtypes=REAL_ALL),
    OpInfo("min", samples=_extreme_samples, dtypes=REAL_ALL),
    OpInfo("Tensor.max", samples=_extreme_samples, dtypes=FLOATS),
    OpInfo("max_binary", fn="max", samples=_binary_extreme, dtypes=REAL_ALL),
    OpInfo("min_binary", fn="Tensor.min", samples=_binary_extreme, dtypes=FLOATS + INTS),
    OpInfo("max_out", fn=_max_out, samples=lambda d, r: [S((make((3, 4), d, r), 1))],
           dtypes=FLOATS, grad=False),
    OpInfo("amax", samples=_amax_samples, dtypes=REAL_ALL),
    OpInfo("amin", samples=_amax_samples, dtypes=REAL_ALL),
    OpInfo("aminmax", samples=_aminmax_samples, dtypes=REAL_ALL),
    OpInfo("argmax", samples=_arg_samples, dtypes=NUM + ("bool",), grad=False),
    OpInfo("argmin", samples=_arg_samples, dtypes=NUM, grad=False),
    OpInfo("var", samples=_var_samples, dtypes=FH + ("int64",)),
    OpInfo("std", samples=_var_samples, dtypes=FH + ("int64",)),
    OpInfo("Tensor.std", samples=_var_samples, dtypes=FLOATS),
    OpInfo("var_mean", samples=_var_samples, dtypes=FLOATS),
    OpInfo("std_mean", samples=_var_samples, dtypes=FLOATS + HALVES),
    OpInfo("logsumexp", samples=_lse_samples, dtypes=FH + INTS + ("bool",)),
    OpInfo("norm", fn=_norm_fn, samples=with_extra(_norm_samples, lambda d, r: [
        S((make((3, 4), d, r),), {"dtype": "float64"}, "dtype")] if d == "float32" else []),
        dtypes=FH, errors=_norm_errors, half_atol=3e-2),
    OpInfo("Tensor.norm", samples=_norm_samples, dtypes=FLOATS),
    OpInfo("cumsum", fn=_with_dtype("cumsum"), samples=with_extra(_cum_samples(), lambda d, r: [
        S((make((3, 4), d, r),), {"dim": 1, "dtype": "float64"}, "dtype")]), dtypes=REAL_ALL),
    OpInfo("cumsum_", fn=_inplace("cumsum"), samples=_cum_samples(), dtypes=FLOATS + ("int64",)),
    OpInfo("cumprod", fn=_with_dtype("cumprod"), samples=with_extra(
        _cum_samples(low=-2, high=2), _cumprod_zero_samples), dtypes=REAL_ALL),
    OpInfo("cumprod_zeros", fn="cumprod", samples=_cumprod_zero_samples, dtypes=FLOATS),
    OpInfo("cummax", samples=with_extra(with_extra(_cum_samples(empty=False), _cumext_nan),
                                        _cumext_ties), dtypes=REAL_ALL),
    OpInfo("cummin", samples=with_extra(with_extra(_cum_samples(empty=False), _cumext_nan),
                                        _cumext_ties), dtypes=REAL_ALL),
    # torch returns a grad that requires grad for empty inputs, which the grad test can't read
    OpInfo("cummax_empty", fn="cummax", samples=lambda d, r: [S((make((0, 3), d, r),), {"dim": 0}),
                                                              S((make((0, 3), d, r),), {"dim": 1})],
           dtypes=FLOATS + ("int64",), grad=False),
    OpInfo("logcumsumexp", samples=_lcse_samples, dtypes=FH + ("int64",)),
    OpInfo("any", samples=reduce_samples(), dtypes=REAL_ALL, grad=False),
    OpInfo("all", samples=reduce_samples(), dtypes=REAL_ALL, grad=False),
    OpInfo("count_nonzero", samples=reduce_samples(dim_kw="dim"), fn=lambda lib, x, keepdim=False,
           **kw: lib.count_nonzero(x, **kw), dtypes=REAL_ALL, grad=False),
]
