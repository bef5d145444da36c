"""Sorting and selection: sort, argsort, topk, kthvalue, median, mode, quantile, unique,
bincount, histc, searchsorted, bucketize."""
import math

import numpy as np

from .core import ALL_NUMERIC, FLOATS, HALVES, INTS, OpInfo, SampleInput as S, make, np_dtype
from .db_reduction import arr

NAN = math.nan
FH = FLOATS + HALVES
NUM = INTS + FH


def distinct(shape, dtype, rng, noncontig=False):
    """Values without ties (so tie-dependent indices are well defined); floats are random."""
    dt = np_dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -(n // 2)
        a = (rng.permutation(n) + lo).astype(dt).reshape(shape)
    else:
        a = (rng.permutation(n) * 0.25 - n / 8).astype(dt).reshape(shape)
    if noncontig and a.ndim:
        big = np.empty(shape[:-1] + (shape[-1] * 2,), dtype=dt)
        big[..., ::2] = a
        a = big[..., ::2]
    return a


def _sort_samples(dtype, rng):
    # stable=True: ties (ints, bool, halves) have one right answer
    def m(shape, **k):
        return make(shape, dtype, rng, **k)
    yield S((distinct((3, 4), dtype, rng),), {"stable": True}, "default")
    yield S((m((3, 4)),), {"dim": 0, "stable": True}, "dim0")
    yield S((m((3, 5)),), {"descending": True, "stable": True}, "descending")
    yield S((m((2, 3, 4), noncontig=True),), {"dim": 1, "stable": True, "descending": True},
            "noncontig-desc")
    yield S((m(()),), {"stable": True}, "0d")
    yield S((m((0, 3)),), {"dim": 0, "stable": True}, "empty")
    yield S((m((4, 7), low=0, high=3),), {"stable": True}, "ties")
    yield S((m((4, 7), low=0, high=3),), {"stable": True, "descending": True}, "ties-desc")
    if np_dtype(dtype).kind in "fV":
        yield S((arr([[1, NAN, 3, NAN, 0], [NAN, 2, 2, 1, NAN]], dtype),),
                {"stable": True}, "nan")
        yield S((arr([[1, NAN, 3, NAN, 0], [NAN, 2, 2, 1, NAN]], dtype),),
                {"stable": True, "descending": True}, "nan-desc")


def _sort_plain(dtype, rng):
    # the default (stable=False) on tie-free data
    yield S((distinct((3, 6), dtype, rng),), {}, "default")
    yield S((distinct((3, 6), dtype, rng),), {"dim": 0, "descending": True}, "desc")


def _topk_samples(dtype, rng):
    def d(shape, **k):
        return distinct(shape, dtype, rng, **k)
    yield S((d((3, 5)), 2), {}, "k2")
    yield S((d((3, 5)), 3), {"dim": 0, "largest": False}, "smallest-dim0")
    yield S((d((2, 3, 4), noncontig=True), 4), {"dim": -1}, "noncontig-all")
    yield S((d((3, 5)), 0), {}, "k0")
    yield S((d((4, 40)), 3), {}, "partial")
    yield S((d((40, 3)), 5), {"dim": 0, "largest": False}, "partial-smallest")
    yield S((d(()), 1), {}, "0d")
    yield S((make((0, 3), dtype, rng), 2), {}, "empty")
    yield S((d((3, 5)), 6), {}, "k-too-big")
    if np_dtype(dtype).kind in "fV":
        yield S((arr([[5, NAN, 4, 1]], dtype), 2), {}, "nan")
        yield S((arr([[5, NAN, 4, 1, 0, 2, 3, 6, 7, 8]], dtype), 2), {}, "nan-partial")


def _topk_unsorted(dtype, rng):
    yield S((distinct((3, 7), dtype, rng), 3), {"sorted": False}, "unsorted")


def _sort_last(e, t):
    np.testing.assert_array_equal(np.sort(e, -1), np.sort(t, -1))


def _kth_samples(dtype, rng):
    def d(shape, **k):
        return distinct(shape, dtype, rng, **k)
    yield S((d((3, 5)), 2), {}, "k2")
    yield S((d((3, 5)), 3), {"dim": 0, "keepdim": True}, "dim0-keep")
    yield S((d((2, 3, 4), noncontig=True), 4), {"dim": -1}, "noncontig")
    yield S((d(()), 1), {}, "0d")
    yield S((d((3, 5)), 6), {}, "k-too-big")
    yield S((d((3, 5)), 0), {}, "k0")
    if np_dtype(dtype).kind in "fV":
        yield S((arr([1, NAN, 3], dtype), 3), {}, "nan")


def _median_samples(dtype, rng):
    def d(shape, **k):
        return distinct(shape, dtype, rng, **k)
    yield S((d((3, 5)),), {}, "all-odd")
    yield S((d((4, 4)),), {}, "all-even")
    yield S((d((3, 4)),), {"dim": 1}, "dim-even")
    yield S((d((3, 5)),), {"dim": 0, "keepdim": True}, "dim0-keep")
    yield S((d((2, 3, 5), noncontig=True),), {"dim": -1}, "noncontig")
    yield S((d(()),), {}, "0d")
    yield S((d(()),), {"dim": 0}, "0d-dim")
    yield S((make((0, 3), dtype, rng),), {"dim": 0}, "empty-reduced")
    yield S((make((0, 3), dtype, rng),), {"dim": 1}, "empty-kept")
    if np_dtype(dtype).kind in "fV":
        yield S((make((0, 3), dtype, rng),), {}, "empty")
        yield S((arr([[1, NAN, 3, 2], [4, 1, 2, 3], [NAN, NAN, 1, 2], [NAN, NAN, NAN, 1]],
                     dtype),), {"dim": 1}, "nan-dim")
        # (torch's index for an all-NaN row is an nth_element artefact beyond 3 elements)
        yield S((arr([[NAN, NAN], [NAN, 1]], dtype),), {"dim": 1}, "all-nan")
        yield S((arr([1, NAN, 3, 2], dtype),), {}, "nan-all")
        yield S((arr([[1, 3, 3, 1], [2, 2, 5, 0]], dtype),), {}, "ties-all")


def _mode_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, low=0, high=3, **k)
    yield S((distinct((3, 5), dtype, rng),), {}, "distinct")
    yield S((m((4, 7)),), {}, "ties")
    yield S((m((4, 7)),), {"dim": 0, "keepdim": True}, "dim0-keep")
    yield S((m((2, 3, 6), noncontig=True),), {"dim": 1}, "noncontig")
    yield S((m(()),), {}, "0d")
    yield S((make((0, 3), dtype, rng),), {"dim": 0}, "empty")
    yield S((make((0, 3), dtype, rng),), {"dim": 1}, "empty-kept")
    if np_dtype(dtype).kind in "fV":
        yield S((arr([[1, 3, 3, 1, 2], [2.5, 1, 2.5, 0, 0]], dtype),), {}, "float-ties")


def _q(values, dtype):
    return arr(values, dtype)


def _quantile_samples(dtype, rng):
    def d(shape, **k):
        return distinct(shape, dtype, rng, **k)
    yield S((d((3, 5)), 0.3), {"dim": 1}, "q-float-dim")
    yield S((d((3, 5)), 0.3), {}, "q-float")
    yield S((d((3, 5)), _q([0.0, 0.25, 0.5, 1.0], dtype)), {"dim": 0, "keepdim": True},
            "q-tensor-keep")
    yield S((d((2, 3, 4), noncontig=True), _q([0.1, 0.9], dtype)), {"keepdim": True},
            "q-tensor-all-keep")
    yield S((d((3, 5)), _q(0.5, dtype)), {"dim": -1}, "q-0d-tensor")
    for interp in ("lower", "higher", "midpoint", "nearest"):
        yield S((d((4, 5)), _q([0.125, 0.5, 0.7], dtype)), {"dim": 1, "interpolation": interp},
                interp)
    yield S((d(()), 0.5), {}, "0d")
    yield S((d((3, 5)), 1.5), {}, "q-out-of-range")
    yield S((d((3, 5)), _q([[0.5]], dtype)), {}, "q-2d")
    yield S((d((3, 5)), 0.5), {"interpolation": "foo"}, "bad-interp")
    yield S((make((0,), dtype, rng), 0.5), {}, "empty")
    yield S((arr([[1, NAN, 3, 2], [4, 1, 2, 3], [NAN] * 4], dtype), _q([0.3, 0.5], dtype)),
            {"dim": 1}, "nan")


def _quantile_errors(rng):
    x = make((3, 4), "float32", rng)
    yield S((x, np.array([0.5], dtype=np.float64)), {}), RuntimeError  # q dtype
    yield S((make((3,), "int64", rng), 0.5), {}), RuntimeError
    yield S((make((3,), "float16", rng), 0.5), {}), RuntimeError


def _unique_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, low=0, high=4, **k)
    yield S((m((10,)),), {}, "plain")
    yield S((m((3, 4)),), {"return_inverse": True, "return_counts": True}, "inverse-counts")
    yield S((m((3, 4)),), {"sorted": False, "return_counts": True}, "unsorted")
    yield S((m((5, 2)),), {"dim": 0, "return_inverse": True, "return_counts": True}, "dim0")
    yield S((m((2, 5)),), {"dim": -1, "return_inverse": True}, "dim-1")
    yield S((m(()),), {"return_inverse": True}, "0d")
    yield S((make((0,), dtype, rng),), {"return_inverse": True, "return_counts": True}, "empty")
    if np_dtype(dtype).kind in "fV":
        yield S((arr([NAN, 1, NAN, 0], dtype),), {"return_counts": True}, "nan")


def _unique_consecutive_samples(dtype, rng):
    def m(shape, **k):
        return make(shape, dtype, rng, low=0, high=2, **k)
    yield S((m((12,)),), {}, "plain")
    yield S((m((3, 4)),), {"return_inverse": True, "return_counts": True}, "inverse-counts")
    yield S((m((6, 2)),), {"dim": 0, "return_inverse": True, "return_counts": True}, "dim0")
    yield S((m((2, 6)),), {"dim": 1, "return_counts": True}, "dim1")
    yield S((make((0,), dtype, rng),), {"return_inverse": True, "return_counts": True}, "empty")


def _bincount_samples(dtype, rng):
    x = make((12,), dtype, rng, low=0, high=6)
    yield S((x,), {}, "plain")
    yield S((x,), {"minlength": 10}, "minlength")
    yield S((x, make((12,), "float32", rng)), {}, "weights-f32")
    yield S((x, make((12,), "float64", rng)), {"minlength": 2}, "weights-f64")
    yield S((x, make((12,), "int64", rng)), {}, "weights-int")
    yield S((x, make((12,), "float16", rng)), {}, "weights-f16")
    yield S((make((0,), dtype, rng),), {"minlength": 3}, "empty")
    yield S((make((2, 3), dtype, rng, low=0),), {}, "2d")
    yield S((x,), {"minlength": -1}, "negative-minlength")
    if dtype != "uint8":
        yield S((arr([1, -1], dtype),), {}, "negative")


def _bincount_fn(lib, x, weights=None, **kw):
    return lib.bincount(x, weights, **kw) if weights is not None else x.bincount(**kw)


def _histc_samples(dtype, rng):
    yield S((make((20,), dtype, rng),), {"bins": 6, "min": -2, "max": 2}, "range")
    yield S((make((3, 5), dtype, rng),), {"bins": 4}, "data-range")
    yield S((arr([1, 1, 1], dtype),), {"bins": 4}, "constant")
    yield S((arr([1, 2, 1, 3], dtype),), {"bins": 4, "min": 0, "max": 3}, "edges")
    yield S((make((0,), dtype, rng),), {"bins": 3}, "empty")
    yield S((make((5,), dtype, rng),), {"bins": 3, "min": 2, "max": 1}, "max<min")
    yield S((make((5,), dtype, rng),), {"bins": 0}, "no-bins")
    yield S((make((5,), dtype, rng),), {}, "default-bins")


def _search_samples(dtype, rng):
    def srt(shape):
        return np.sort(make(shape, dtype, rng), axis=-1)
    v = make((2, 3), dtype, rng)
    yield S((srt((6,)), v), {}, "1d")
    yield S((srt((6,)), v), {"right": True}, "right")
    yield S((srt((6,)), v), {"side": "right", "out_int32": True}, "side-int32")
    yield S((srt((2, 5)), make((2, 4), dtype, rng)), {}, "nd")
    yield S((srt((2, 5)), make((3, 4), dtype, rng)), {}, "nd-mismatch")
    yield S((arr([1, 3, 3, 5, 7], dtype), arr([3, 5, 0, 8], dtype)), {"right": True}, "ties")
    yield S((srt((6,)), v), {"side": "left", "right": True}, "conflict")
    perm = rng.permutation(6)
    seq = srt((6,))
    yield S((seq[np.argsort(perm)], v), {"sorter": np.argsort(seq[np.argsort(perm)],
                                                               kind="stable")}, "sorter")
    yield S((srt((6,)), 2), {}, "scalar")


def _bucketize_samples(dtype, rng):
    b = np.sort(make((5,), dtype, rng), axis=-1)
    yield S((make((3, 4), dtype, rng), b), {}, "plain")
    yield S((make((3, 4), dtype, rng), b), {"right": True, "out_int32": True}, "right-int32")
    yield S((arr([1, 3, 5], dtype), arr([1, 3, 5, 7], dtype)), {"right": True}, "ties-right")
    yield S((arr([1, 3, 5], dtype), arr([1, 3, 5, 7], dtype)), {}, "ties-left")
    yield S((2, b), {}, "scalar")
    yield S((make((3,), dtype, rng), np.sort(make((2, 3), dtype, rng))), {}, "2d-boundaries")


OPS = [
    OpInfo("sort", samples=_sort_samples, dtypes=ALL_NUMERIC),
    OpInfo("sort_default", fn="sort", samples=_sort_plain, dtypes=FLOATS + INTS),
    OpInfo("Tensor.sort", samples=_sort_samples, dtypes=FLOATS),
    OpInfo("argsort", samples=_sort_samples, dtypes=ALL_NUMERIC, grad=False),
    OpInfo("msort", samples=lambda d, r: [S((distinct((4, 3), d, r),))], dtypes=FH + INTS),
    OpInfo("topk", samples=_topk_samples, dtypes=NUM + ("bool",)),
    # torch's unsorted order is unspecified: compare sorted outputs, and no gradient test
    OpInfo("topk_unsorted", fn="topk", samples=_topk_unsorted, dtypes=FLOATS + INTS,
           compare=_sort_last, grad=False),
    OpInfo("kthvalue", samples=_kth_samples, dtypes=NUM),
    OpInfo("median", samples=_median_samples, dtypes=NUM + ("bool",)),
    OpInfo("nanmedian", samples=_median_samples, dtypes=NUM),
    OpInfo("Tensor.median", samples=_median_samples, dtypes=FLOATS),
    OpInfo("mode", samples=_mode_samples, dtypes=ALL_NUMERIC),
    OpInfo("quantile", samples=_quantile_samples, dtypes=FLOATS, errors=_quantile_errors),
    OpInfo("nanquantile", samples=_quantile_samples, dtypes=FLOATS),
    OpInfo("Tensor.quantile", samples=_quantile_samples, dtypes=FLOATS),
    OpInfo("unique", samples=_unique_samples, dtypes=ALL_NUMERIC, grad=False),
    OpInfo("Tensor.unique", samples=_unique_samples, dtypes=FLOATS + ("int64",), grad=False),
    OpInfo("unique_consecutive", samples=_unique_consecutive_samples, dtypes=ALL_NUMERIC,
           grad=False),
    OpInfo("bincount", fn=_bincount_fn, samples=_bincount_samples, dtypes=INTS + FLOATS,
           grad=False),
    OpInfo("histc", samples=_histc_samples, dtypes=FH + ("int64",), grad=False),
    OpInfo("searchsorted", samples=_search_samples, dtypes=FLOATS + INTS, grad=False),
    OpInfo("bucketize", samples=_bucketize_samples, dtypes=FLOATS + INTS, grad=False),
]
