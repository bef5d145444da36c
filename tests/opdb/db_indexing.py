"""Indexing operators: getitem/setitem forms, gather/scatter, index_*, masks, take/put."""
import warnings

import numpy as np

from .core import ALL_NUMERIC, COMPLEX, FLOATS, OpInfo, SampleInput, make

D = ALL_NUMERIC
DC = FLOATS + COMPLEX + ("int64", "bool", "float16")


def _quiet(f):
    """Run ``f`` with torch's (and ember's) beta/deprecation UserWarnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return f()


def _i(*vals):
    return np.array(vals, dtype=np.int64)


def _getitem(lib, x, *idx, k):
    return x[k(*idx)]


def _getitem_samples(dtype, rng):
    x = make((4, 5, 6), dtype, rng)
    nc = make((4, 5, 6), dtype, rng, noncontig=True)
    yield SampleInput((x,), {"k": lambda: 2}, name="int")
    yield SampleInput((x,), {"k": lambda: -1}, name="neg-int")
    yield SampleInput((x,), {"k": lambda: (1, -2, 3)}, name="all-ints")
    yield SampleInput((nc,), {"k": lambda: (slice(1, None, 2), slice(None, -1), 0)}, name="slices")
    yield SampleInput((x,), {"k": lambda: (None, Ellipsis, None, 1)}, name="none-ellipsis")
    yield SampleInput((x,), {"k": lambda: (slice(10, 20),)}, name="empty-slice")
    yield SampleInput((x, _i(0, 2, 2, -1)), {"k": lambda i: i}, name="int-tensor-dup")
    yield SampleInput((x, _i(0, 2), _i(1, 3)), {"k": lambda i, j: (i, slice(None), j)},
                      name="separated-adv")
    yield SampleInput((x, _i(0, 2), _i(1, 3)), {"k": lambda i, j: (slice(None), i, j)},
                      name="adjacent-adv")
    yield SampleInput((nc, _i(1, 0)), {"k": lambda i: (0, slice(1, None), i)}, name="int-adv-mix")
    yield SampleInput((x, rng.random((4, 5)) > 0.5), {"k": lambda m: m}, name="mask-2d")
    yield SampleInput((x, rng.random(5) > 0.5), {"k": lambda m: (slice(None), m, None)},
                      name="mask-middle")
    yield SampleInput((x, np.array([[0, 1], [2, 3]], dtype=np.int64)),
                      {"k": lambda i: (Ellipsis, i)}, name="2d-index")
    yield SampleInput((x,), {"k": lambda: ([0, 3], 1, [2, 2])}, name="lists")
    yield SampleInput((x,), {"k": lambda: (True, 0)}, name="true")
    yield SampleInput((x,), {"k": lambda: (False,)}, name="false")
    yield SampleInput((make((), dtype, rng),), {"k": lambda: (None, Ellipsis)}, name="0d")
    yield SampleInput((x, np.array(2, dtype=np.int64)), {"k": lambda i: (1, i)}, name="0d-index")


def _getitem_errors(rng):
    x = make((3, 4), "float32", rng)
    yield SampleInput((x,), {"k": lambda: 3}), IndexError
    yield SampleInput((x,), {"k": lambda: (0, -5)}), IndexError
    yield SampleInput((x,), {"k": lambda: (0, 0, 0)}), IndexError
    yield SampleInput((x,), {"k": lambda: slice(None, None, -1)}), ValueError
    yield SampleInput((x,), {"k": lambda: slice(None, None, 0)}), ValueError
    yield SampleInput((x, _i(5)), {"k": lambda i: i}), IndexError
    yield SampleInput((x, np.array([1.0])), {"k": lambda i: i}), IndexError
    yield SampleInput((x, np.array([True, False])), {"k": lambda m: m}), IndexError
    yield SampleInput((x, _i(0, 1), _i(0, 1, 2)), {"k": lambda i, j: (i, j)}), IndexError
    yield SampleInput((make((), "float32", rng),), {"k": lambda: 0}), IndexError
    yield SampleInput((x,), {"k": lambda: 1.5}), IndexError


def _setitem(lib, x, v, *idx, k):
    y = x.clone()
    y[k(*idx)] = v
    return y


def _setitem_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, make((5,), dtype, rng)), {"k": lambda: 1}, name="row")
    yield SampleInput((x, make((), dtype, rng)), {"k": lambda: (slice(1, 3), slice(None, None, 2))},
                      name="slice-0d")
    yield SampleInput((x, make((1, 2, 5), dtype, rng)), {"k": lambda: slice(0, 2)},
                      name="leading-ones")
    yield SampleInput((x, make((3,), dtype, rng), _i(0, 2, 3)), {"k": lambda i: (i, 1)},
                      name="adv")
    yield SampleInput((x, make((5,), dtype, rng), rng.random((4, 5)) > 0.5),
                      {"k": lambda m: (m[:, 0],)}, name="row-mask")
    yield SampleInput((x, 1), {"k": lambda: (Ellipsis, -1)}, name="scalar")
    yield SampleInput((x, make((2,), dtype, rng), _i(3, 0)), {"k": lambda i: (slice(1, 2), i)},
                      name="basic-then-adv")
    yield SampleInput((x, make((1, 2), "float64", rng)), {"k": lambda: (slice(0, 2), 0)},
                      name="cast", grad_args=(0,))
    yield SampleInput((x, make((2, 1), dtype, rng)), {"k": lambda: (slice(0, 2), 0)},
                      name="too-many-dims")


def _setitem_samples_mask(dtype, rng):
    x = make((4, 5), dtype, rng)
    m = rng.random((4, 5)) > 0.5
    yield SampleInput((x, make((), dtype, rng), m), {"k": lambda m: m}, name="mask-0d-value")
    yield SampleInput((x, make((int(m[0].sum()),), dtype, rng), m[0]),
                      {"k": lambda m: (0, m)}, name="row-mask")


def _gather_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, 0, rng.integers(0, 3, (2, 4))), name="dim0")
    yield SampleInput((x, 1, rng.integers(0, 4, (3, 6))), name="dim1-dups")
    yield SampleInput((x, -1, rng.integers(0, 4, (2, 2))), name="smaller-index")
    yield SampleInput((make((3, 4), dtype, rng, noncontig=True), 0, rng.integers(0, 3, (3, 4))),
                      name="noncontig")
    yield SampleInput((make((), dtype, rng), 0, np.array(0)), name="0d")
    yield SampleInput((x, 1, np.zeros((3, 0), dtype=np.int64)), name="empty")


def _index_errors_gather(rng):
    x = make((3, 4), "float32", rng)
    yield SampleInput((x, 0, np.array([[5]])),), RuntimeError
    yield SampleInput((x, 0, np.array([[1]], dtype=np.int16)),), RuntimeError
    yield SampleInput((x, 0, np.array([1])),), RuntimeError
    yield SampleInput((x, 0, np.zeros((2, 5), dtype=np.int64)),), RuntimeError


def _scatter_samples(dtype, rng, value=False):
    x = make((3, 5), dtype, rng)
    # unique positions per column so results do not depend on write order
    idx0 = np.stack([rng.permutation(3)[:2] for _ in range(5)], 1)
    src = make((2, 5), dtype, rng)
    yield SampleInput((x, 0, idx0, 1.5 if value and dtype in FLOATS else src if not value else 1),
                      name="dim0")
    idx1 = np.stack([rng.permutation(5)[:3] for _ in range(3)], 0)
    yield SampleInput((x, 1, idx1.astype(np.int32), make((3, 3), dtype, rng) if not value else 0),
                      name="dim1-int32")
    # torch's backward rejects a src larger than index: values only
    yield SampleInput((x, 1, idx1, make((3, 4), dtype, rng) if not value else 0),
                      name="dim1-src-big", grad_args=(0,))
    yield SampleInput((x, -1, np.zeros((3, 0), dtype=np.int64),
                       make((3, 2), dtype, rng) if not value else 2), name="empty-index",
                      grad_args=(0,))


def _scatter_add_samples(dtype, rng):
    x = make((3, 5), dtype, rng)
    yield SampleInput((x, 0, rng.integers(0, 3, (4, 5)), make((4, 5), dtype, rng)), name="dups")
    yield SampleInput((x, 1, rng.integers(0, 5, (2, 7)), make((2, 7), dtype, rng)), name="dim1")
    yield SampleInput((x, 1, rng.integers(0, 5, (2, 7)), make((3, 8), dtype, rng)),
                      name="src-big", grad_args=(0,))
    yield SampleInput((make((), dtype, rng), 0, np.array(0), make((), dtype, rng)), name="0d")


def _scatter_reduce_samples(dtype, rng):
    x = make((3, 5), dtype, rng, exclude_zero=True)
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            yield SampleInput((x, 0, rng.integers(0, 3, (4, 5)),
                               make((4, 5), dtype, rng, exclude_zero=True), red),
                              {"include_self": inc}, name=f"{red}-{inc}")


def _scatter_errors(rng):
    x = make((3, 4), "float32", rng)
    yield SampleInput((x, 0, np.array([[3]]), make((1, 1), "float32", rng))), RuntimeError
    yield SampleInput((x, 0, np.array([[1]]), make((1, 1), "float64", rng))), RuntimeError
    yield SampleInput((x, 0, np.array([[1]], dtype=np.uint8), make((1, 1), "float32", rng))), \
        RuntimeError
    yield SampleInput((x, 0, np.array([1]), make((1, 1), "float32", rng))), RuntimeError


def _vec_idx(n, k, rng, unique=False):
    return (rng.permutation(n)[:k] if unique else rng.integers(0, n, (k,))).astype(np.int64)


def _index_select_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, 0, _vec_idx(4, 6, rng)), name="dim0-dups")
    yield SampleInput((make((4, 5), dtype, rng, noncontig=True), -1, _vec_idx(5, 3, rng)),
                      name="noncontig")
    yield SampleInput((x, 1, _vec_idx(5, 2, rng).astype(np.int32)), name="int32")
    yield SampleInput((x, 1, np.zeros(0, dtype=np.int64)), name="empty")
    yield SampleInput((x, 0, np.array(2)), name="0d-index")
    yield SampleInput((make((), dtype, rng), 0, np.array([0, 0])), name="0d-input")


def _index_select_errors(rng):
    x = make((4, 5), "float32", rng)
    yield SampleInput((x, 0, np.array([[1]]))), IndexError
    yield SampleInput((x, 0, np.array([4]))), IndexError
    yield SampleInput((x, 2, np.array([1]))), IndexError


def _index_add_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, 0, _vec_idx(4, 6, rng), make((6, 5), dtype, rng)), name="dups")
    yield SampleInput((x, -1, _vec_idx(5, 2, rng), make((4, 2), dtype, rng)),
                      {"alpha": 2} if dtype != "bool" else {}, name="alpha")


def _index_copy_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, 0, _vec_idx(4, 3, rng, True), make((3, 5), dtype, rng)), name="dim0")
    yield SampleInput((x, 1, _vec_idx(5, 2, rng, True), make((4, 2), dtype, rng)), name="dim1")


def _index_fill_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, 0, _vec_idx(4, 3, rng), 2), name="scalar")
    yield SampleInput((x, 1, _vec_idx(5, 3, rng), make((), dtype, rng)), name="0d-tensor")
    yield SampleInput((x, -1, np.array([-1])), {"value": 1}, name="neg-index")


def _index_reduce_samples(dtype, rng):
    x = make((4, 3), dtype, rng, exclude_zero=True)
    for red in ("prod", "mean", "amax", "amin"):
        for inc in (True, False):
            yield SampleInput((x, 0, _vec_idx(4, 5, rng), make((5, 3), dtype, rng,
                                                               exclude_zero=True), red),
                              {"include_self": inc}, name=f"{red}-{inc}")


def _index_put_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, (_i(0, 2, 0), _i(1, 1, 1)), make((3,), dtype, rng)),
                      {"accumulate": True}, name="accumulate-dups")
    yield SampleInput((x, (_i(3, 1),), make((5,), dtype, rng)), name="rows-broadcast")
    yield SampleInput((x, (rng.random((4, 5)) > 0.5,), make((), dtype, rng)), name="mask")


def _index_put(lib, x, indices, values, **kw):
    return x.index_put(indices, values, **kw)


def _index_put_(lib, x, indices, values, **kw):
    return x.clone().index_put_(tuple(indices), values, **kw)


def _masked_fill_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, rng.random((3, 4)) > 0.5, 2), name="scalar")
    yield SampleInput((x, rng.random((4,)) > 0.5, make((), dtype, rng)), name="bcast-0d-value")
    yield SampleInput((make((3, 4), dtype, rng, noncontig=True), rng.random((3, 1)) > 0.5, 0),
                      name="noncontig")
    if dtype in FLOATS:
        yield SampleInput((x, rng.random((3, 4)) > 0.5, float("inf")), name="inf")


def _masked_fill_errors(rng):
    x = make((3, 4), "float32", rng)
    yield SampleInput((x, np.ones((3, 4), np.float32), 1)), RuntimeError
    yield SampleInput((x, np.ones((3, 4), bool), make((2,), "float32", rng))), RuntimeError


def _masked_scatter_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, rng.random((3, 4)) > 0.5, make((3, 5), dtype, rng)), name="src-big")
    yield SampleInput((x, rng.random((4,)) > 0.5, make((12,), dtype, rng)), name="bcast")


def _masked_select_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, rng.random((3, 4)) > 0.5), name="same")
    yield SampleInput((x, rng.random((2, 1, 4)) > 0.5), name="bcast")
    yield SampleInput((make((), dtype, rng), np.array(True)), name="0d")


def _nonzero_samples(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng, low=-1, high=2),), name="2d")
    yield SampleInput((make((5,), dtype, rng, low=0, high=2),), name="1d")
    yield SampleInput((make((), dtype, rng, low=1, high=3),), name="0d")
    yield SampleInput((make((0, 2), dtype, rng),), name="empty")


def _take_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, rng.integers(-12, 12, (2, 5))), name="2d-neg-dups")
    yield SampleInput((make((3, 4), dtype, rng, noncontig=True), np.array(5)), name="0d-index")


def _put_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, _i(0, 5, 5, -1), make((4,), dtype, rng)), {"accumulate": True},
                      name="accumulate")
    yield SampleInput((x, np.array([[1, 7], [2, 3]]), make((2, 2), dtype, rng)), name="2d")


def _take_along_dim_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, rng.integers(0, 4, (3, 2)), 1), name="dim1")
    yield SampleInput((x, rng.integers(0, 3, (2, 1)), 0), name="bcast")
    yield SampleInput((x, rng.integers(0, 12, (5,))), name="flat")


OPS = [
    OpInfo("getitem", fn=_getitem, samples=_getitem_samples, dtypes=DC, errors=_getitem_errors),
    OpInfo("setitem", fn=_setitem, samples=_setitem_samples, dtypes=DC),
    OpInfo("setitem_mask", fn=_setitem, samples=_setitem_samples_mask, dtypes=DC),
    OpInfo("gather", samples=_gather_samples, dtypes=D + COMPLEX, errors=_index_errors_gather),
    OpInfo("Tensor.gather", samples=_gather_samples, dtypes=FLOATS),
    OpInfo("scatter", samples=_scatter_samples, dtypes=D + COMPLEX, errors=_scatter_errors),
    OpInfo("scatter_value", fn=lambda lib, x, d, i, v: x.scatter(d, i, v),
           samples=lambda dt, rng: _scatter_samples(dt, rng, value=True), dtypes=D),
    OpInfo("scatter_reduce_add", fn=lambda lib, x, d, i, s: _quiet(
        lambda: x.clone().scatter_(d, i, s, reduce="add")),
           samples=_scatter_add_samples, dtypes=FLOATS + ("int64",), grad=False),
    OpInfo("scatter_value_multiply", fn=lambda lib, x, d, i, v: x.clone().scatter_(
        d, i, v, reduce="multiply"),
           samples=lambda dt, rng: _scatter_samples(dt, rng, value=True),
           dtypes=FLOATS + ("int64",), grad=False),
    OpInfo("scatter_", fn=lambda lib, x, *a: x.clone().scatter_(*a),
           samples=_scatter_samples, dtypes=FLOATS),
    OpInfo("scatter_add", samples=_scatter_add_samples, dtypes=D, errors=_scatter_errors),
    OpInfo("scatter_add_", fn=lambda lib, x, *a: x.clone().scatter_add_(*a),
           samples=_scatter_add_samples, dtypes=FLOATS),
    OpInfo("scatter_reduce", samples=_scatter_reduce_samples,
           dtypes=FLOATS + ("int64", "int32", "float16"), grad_rtol=1e-6),
    OpInfo("scatter_reduce_", fn=lambda lib, x, *a, **k: x.clone().scatter_reduce_(*a, **k),
           samples=_scatter_reduce_samples, dtypes=FLOATS, grad_rtol=1e-6),
    OpInfo("index_select", samples=_index_select_samples, dtypes=D + COMPLEX,
           errors=_index_select_errors),
    OpInfo("index_add", samples=_index_add_samples, dtypes=D),
    OpInfo("index_add_", fn=lambda lib, x, *a, **k: x.clone().index_add_(*a, **k),
           samples=_index_add_samples, dtypes=FLOATS),
    OpInfo("index_copy", samples=_index_copy_samples, dtypes=D),
    OpInfo("index_copy_", fn=lambda lib, x, *a: x.clone().index_copy_(*a),
           samples=_index_copy_samples, dtypes=FLOATS),
    OpInfo("index_fill", fn=lambda lib, x, d, i, *v, **k: x.index_fill(d, i, *v, **k),
           samples=_index_fill_samples, dtypes=D),
    OpInfo("index_fill_", fn=lambda lib, x, d, i, *v, **k: x.clone().index_fill_(d, i, *v, **k),
           samples=_index_fill_samples, dtypes=FLOATS),
    OpInfo("index_reduce", fn=lambda lib, x, *a, **k: _quiet(lambda: x.index_reduce(*a, **k)),
           samples=_index_reduce_samples,
           dtypes=FLOATS + ("int64",), grad_rtol=1e-6),
    OpInfo("index_put", fn=_index_put, samples=_index_put_samples, dtypes=D + COMPLEX),
    OpInfo("index_put_", fn=_index_put_, samples=_index_put_samples, dtypes=FLOATS),
    OpInfo("masked_fill", samples=_masked_fill_samples, dtypes=D + COMPLEX,
           errors=_masked_fill_errors),
    OpInfo("masked_fill_", fn=lambda lib, x, m, v: x.clone().expand(
        *np.broadcast_shapes(tuple(x.shape), tuple(m.shape))).contiguous().masked_fill_(m, v),
        samples=_masked_fill_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("masked_scatter", samples=_masked_scatter_samples, dtypes=D),
    OpInfo("masked_scatter_", fn=lambda lib, x, m, s: x.clone().masked_scatter_(m, s),
           samples=lambda dt, rng: (s for s in _masked_scatter_samples(dt, rng)
                                    if s.name != "bcast-never"), dtypes=FLOATS),
    OpInfo("masked_select", samples=_masked_select_samples, dtypes=D + COMPLEX),
    OpInfo("nonzero", samples=_nonzero_samples, dtypes=D, grad=False),
    OpInfo("nonzero_tuple", fn=lambda lib, x: lib.nonzero(x, as_tuple=True),
           samples=_nonzero_samples, dtypes=("float32", "bool", "int64"), grad=False),
    OpInfo("argwhere", samples=_nonzero_samples, dtypes=("float32", "bool", "int8"), grad=False),
    OpInfo("take", samples=_take_samples, dtypes=D + COMPLEX),
    OpInfo("put", fn=lambda lib, x, i, s, **k: x.put(i, s, **k), samples=_put_samples,
           dtypes=FLOATS + ("int64",)),
    OpInfo("put_", fn=lambda lib, x, i, s, **k: x.clone().put_(i, s, **k), samples=_put_samples,
           dtypes=FLOATS),
    OpInfo("take_along_dim", samples=_take_along_dim_samples, dtypes=D),
]
