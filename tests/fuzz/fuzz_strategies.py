"""Hypothesis strategies for the differential fuzzer: dtypes, shapes (empty and 0-dim
included), arrays salted with special values, memory layouts and index forms."""
import numpy as np
from hypothesis import strategies as st

from fuzz_core import DTYPES
from opdb.core import np_dtype

LAYOUTS = ("contig", "contig", "T", "step", "offset")

dtypes = st.sampled_from(DTYPES)
float_dtypes = st.sampled_from(("float16", "bfloat16", "float32", "float64"))


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return st.lists(st.integers(min_side, max_side), min_size=min_dims,
                    max_size=max_dims).map(tuple)


def special_values(dtype):
    """Values at the edges of ``dtype``: NaN, infinities, -0.0, huge, tiny, min/max."""
    dt = np_dtype(dtype)
    if dt.kind == "b":
        return [True, False]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return [int(info.min), int(info.max), 0, 1, -1 if dt.kind == "i" else 2]
    real = np.float32 if dtype in ("float16", "bfloat16", "complex64") else np.float64
    fin = np.finfo(np.float16) if dtype == "float16" else np.finfo(real)
    vals = [np.nan, np.inf, -np.inf, -0.0, 0.0, float(fin.max), -float(fin.max),
            float(fin.tiny), float(fin.smallest_subnormal), 1e30 if real is np.float64 else 3e38,
            1.0, -1.0]
    if dt.kind == "c":
        return [complex(a, b) for a in vals[:6] for b in (0.0, np.nan, np.inf, 1.0)]
    return vals


@st.composite
def arrays(draw, dtype, shape, specials=None, low=-3, high=3):
    """An array of ``dtype``/``shape``: random values, some replaced by special values."""
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    dt = np_dtype(dtype)
    if dt.kind == "b":
        a = rng.random(shape) > 0.5
    elif dt.kind in "iu":
        a = rng.integers(max(low, 0) if dt.kind == "u" else low, high + 1, size=shape)
        a = a.astype(dt)
    elif dt.kind == "c":
        a = (rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)).astype(dt)
    else:
        a = rng.uniform(low, high, shape).astype(np.float64).astype(dt)
    a = np.asarray(a)
    p = draw(st.sampled_from((0.0, 0.0, 0.1, 0.3))) if specials is None else specials
    if p and a.size:
        vals = special_values(dtype)
        mask = rng.random(a.shape) < p
        picks = rng.integers(0, len(vals), size=a.shape)
        with np.errstate(all="ignore"):
            for i in np.flatnonzero(mask.reshape(-1)):
                a.reshape(-1)[i] = np.asarray(vals[picks.reshape(-1)[i]]).astype(dt)
    return a


def layouts():
    return st.sampled_from(LAYOUTS)


# ---- index forms ------------------------------------------------------------------------

INDEX_DTYPES = ("int64", "int32", "int16", "int8", "uint8")


@st.composite
def index_items(draw, shape):
    """A tuple of index items for a tensor of ``shape``, as (kind, payload) pairs that
    each library turns into its own objects (see `build_index`)."""
    n = draw(st.integers(0, min(len(shape) + 1, 4)))
    items = []
    dim = 0
    for _ in range(n):
        size = shape[dim] if dim < len(shape) else 1
        kind = draw(st.sampled_from(("int", "int", "slice", "slice", "none", "ellipsis", "bool",
                                     "mask", "tensor", "tensor", "list", "scalar_tensor")))
        if kind == "int":
            items.append(("int", draw(st.integers(-size - 1, size))))
            dim += 1
        elif kind == "slice":
            start = draw(st.none() | st.integers(-size - 2, size + 2))
            stop = draw(st.none() | st.integers(-size - 2, size + 2))
            step = draw(st.sampled_from((None, 1, 2, 3, None, -1, 0)))
            items.append(("slice", (start, stop, step)))
            dim += 1
        elif kind == "none":
            items.append(("none", None))
        elif kind == "ellipsis":
            items.append(("ellipsis", None))
            dim = len(shape)
        elif kind == "bool":
            items.append(("bool", draw(st.booleans())))
        elif kind == "mask":
            k = draw(st.integers(1, max(1, min(2, len(shape) - dim))))
            mshape = tuple(shape[dim:dim + k]) if dim + k <= len(shape) else (size,)
            if draw(st.integers(0, 9)) == 0:
                mshape = tuple(s + 1 for s in mshape)  # a mask of the wrong shape
            seed = draw(st.integers(0, 2 ** 16))
            items.append(("mask", np.random.default_rng(seed).random(mshape) > 0.5))
            dim += len(mshape)
        elif kind in ("tensor", "list"):
            ishape = draw(shapes(0 if kind == "tensor" else 1, 2, 0, 3))
            seed = draw(st.integers(0, 2 ** 16))
            hi = max(size, 1)
            vals = np.random.default_rng(seed).integers(-hi - (draw(st.integers(0, 9)) == 0),
                                                        hi, size=ishape)
            if kind == "list":
                items.append(("list", vals.tolist()))
            else:
                idt = draw(st.sampled_from(INDEX_DTYPES))
                if idt == "uint8":
                    vals = np.abs(vals) % 2
                items.append(("tensor", (vals, idt)))
            dim += 1
        else:  # a 0-dim integer tensor behaves like an int
            items.append(("scalar_tensor", draw(st.integers(-size, max(size - 1, 0)))))
            dim += 1
    if len(items) == 1 and draw(st.booleans()):
        return items[0]  # a bare item, not a 1-tuple
    return tuple(items)


def build_index(lib, items):
    """``lib``'s index object for the (kind, payload) description from `index_items`."""
    if isinstance(items, tuple) and items and isinstance(items[0], str):
        return _item(lib, items)
    return tuple(_item(lib, it) for it in items)


def _item(lib, it):
    kind, p = it
    if kind == "int":
        return p
    if kind == "slice":
        return slice(*p)
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind == "bool":
        return p
    if kind == "mask":
        return lib.tensor(p.tolist(), dtype=lib.bool) if p.ndim else lib.tensor(bool(p))
    if kind == "list":
        return p
    if kind == "tensor":
        vals, idt = p
        return lib.tensor(vals.tolist(), dtype=getattr(lib, idt)) if vals.ndim else \
            lib.tensor(int(vals), dtype=getattr(lib, idt))
    if kind == "scalar_tensor":
        return lib.tensor(p)
    raise AssertionError(kind)
