"""Casts, reductions and scans, movement, gather/scatter, matmul, creation and the
counter-based RNG: NumPy calls with ember's parameter conventions (``dims`` tuples,
``key`` tuples whose ``(start, stop, step)`` triples are slices, ``pads`` as
``((dim, lo, hi), ...)``)."""
import numpy as np

from ._blas import matmul

__all__ = ["STRUCTURAL"]

_F32 = np.dtype(np.float32)


def _half(dt):
    return dt is not None and (dt.kind == "V" or dt == np.float16)


def _work(dt):
    return _F32 if _half(dt) else dt


# ---- casts and complex parts -------------------------------------------------------------
def _to_copy(dt, x, dtype=None, **_):
    target = np.dtype(dtype) if dtype is not None else dt
    if target.kind != "c" and x.dtype.kind == "c":
        x = x.real
    return x.astype(target)


def _complex(dt, re, im):
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, dt)
    out.real, out.imag = re, im
    return out


def _view_as_real(dt, x):
    return np.stack([x.real, x.imag], axis=-1)


def _view_as_complex(dt, x):
    return np.ascontiguousarray(x).view(dt)[..., 0]


# ---- reductions and scans ----------------------------------------------------------------
def _acc_dtype(x, dtype, dt):
    if dtype is not None:
        return _work(np.dtype(dtype))
    if x.dtype.kind in "biu":
        return np.dtype(np.int64)
    return _work(x.dtype)


def _sum(dt, x, dims, keepdim, dtype=None):
    return np.sum(x, axis=dims, keepdims=keepdim, dtype=_acc_dtype(x, dtype, dt))


def _prod(dt, x, dims, keepdim, dtype=None):
    return np.prod(x, axis=dims, keepdims=keepdim, dtype=_acc_dtype(x, dtype, dt))


def _arg(fn):
    def k(dt, x, dim=None, keepdim=False):
        if dim is None:
            r = np.asarray(fn(x.reshape(-1)))
            return r.reshape((1,) * x.ndim) if keepdim else r
        if x.ndim == 0:
            return np.zeros((), np.int64)
        return fn(x, axis=dim, keepdims=keepdim)
    return k


def _scan(ufunc):
    def k(dt, x, dim, reverse=False, dtype=None):
        if x.ndim == 0:
            return x
        work = _acc_dtype(x, dtype, dt)
        if reverse:
            return np.flip(ufunc.accumulate(np.flip(x, dim), axis=dim, dtype=work), dim)
        return ufunc.accumulate(x, axis=dim, dtype=work)
    return k


def _cum_extreme(ufunc):
    def k(dt, x, dim):
        if x.ndim == 0 or x.size == 0:
            return x.copy(), np.zeros(x.shape, np.int64)
        w = x.astype(_F32) if _half(x.dtype) else x
        v = ufunc.accumulate(w, axis=dim)
        pos = np.arange(x.shape[dim]).reshape([-1 if i == dim else 1 for i in range(x.ndim)])
        hit = w == v
        if w.dtype.kind in "fc":
            hit |= np.isnan(w)
        # ties move the index to the latest position, as torch does
        return v, np.maximum.accumulate(np.where(hit, pos, 0), axis=dim)
    return k


# ---- movement ----------------------------------------------------------------------------
def _key(key):
    return tuple(slice(*k) if type(k) is tuple else k for k in key) + (Ellipsis,)


def _expand(dt, x, shape):
    lead = len(shape) - x.ndim
    full = tuple(x.shape[i - lead] if n == -1 else n for i, n in enumerate(shape))
    return np.broadcast_to(x, full)


def _root(x):
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


def _as_strided(dt, x, size, stride, storage_offset, rel, in_stride=None):
    # ``rel`` places the view relative to x's first element in its storage
    root = _root(x)
    it = x.itemsize
    start = (x.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // it + rel
    need = 0 if not all(size) else sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if need and (start < 0 or start + need > root.size):
        raise RuntimeError(f"as_strided: sizes {list(size)}, strides {list(stride)} are out of "
                           f"bounds for a storage of {root.size} elements")
    flat = np.lib.stride_tricks.as_strided(root, (root.size,), (it,))
    return np.lib.stride_tricks.as_strided(flat[min(max(start, 0), root.size):], size,
                                           tuple(s * it for s in stride)).copy()


def _cat(dt, *xs, dim, sizes=None):
    # a legacy empty 1-d (0,) tensor joins any concatenation, as in torch
    parts = [x.astype(dt, copy=False) for x in xs if not (x.ndim == 1 and x.shape[0] == 0)]
    if not parts:
        return np.empty((0,), dt)
    return np.concatenate(parts, axis=dim)


_NP_PAD = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
           "circular": "wrap"}


def _source_index(n, lo, hi, mode):
    j = np.arange(n + lo + hi) - lo
    if mode == "reflect":
        period = 2 * (n - 1)
        if period == 0:
            return np.zeros_like(j)
        j = np.abs(j) % period
        return np.where(j >= n, period - j, j)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":
        return j % n
    return np.where((j >= 0) & (j < n), j, -1)


def _pad(dt, x, pads, mode, value=0.0):
    if all(lo >= 0 and hi >= 0 for _, lo, hi in pads):
        width = [(0, 0)] * x.ndim
        for d, lo, hi in pads:
            width[d] = (lo, hi)
        if mode == "constant":
            return np.pad(x, width, mode="constant", constant_values=value)
        return np.pad(x, width, mode=_NP_PAD[mode])
    out = x  # negative pads crop: gather by source index
    for d, lo, hi in pads:
        src = _source_index(out.shape[d], lo, hi, mode)
        taken = np.take(out, np.maximum(src, 0), axis=d)
        if mode == "constant" and (src < 0).any():
            shape = [1] * out.ndim
            shape[d] = len(src)
            taken = np.where((src < 0).reshape(shape), np.asarray(value, out.dtype), taken)
        out = taken
    return out


# ---- gather / scatter --------------------------------------------------------------------
def _adv_key(indices):
    key = []
    for i in indices:
        if i is None:
            key.append(slice(None))
        elif isinstance(i, np.ndarray) and i.dtype == bool:
            key.extend(np.nonzero(i))
        else:
            key.append(i)
    return tuple(key)


def _index(dt, x, *indices):
    return np.asarray(x[_adv_key(indices)])


def _index_put(dt, x, values, *indices, accumulate):
    out = x.copy()
    v = np.asarray(values).astype(x.dtype, copy=False)
    key = _adv_key(indices)
    if accumulate:
        np.add.at(out, key, v)
    else:
        out[key] = v
    return out


def _gather(dt, x, idx, dim):
    if x.ndim == 0 or idx.ndim == 0:
        return _gather(dt, x.reshape(-1), idx.reshape(-1), 0).reshape(idx.shape)
    sl = tuple(slice(0, idx.shape[d]) if d != dim else slice(None) for d in range(x.ndim))
    return np.take_along_axis(x[sl], idx.astype(np.intp), axis=dim)


def _scatter_prep(x, idx, src, dim):
    out = x.copy()
    o = out.reshape(-1) if out.ndim == 0 else out
    i = (idx.reshape(-1) if idx.ndim == 0 else idx).astype(np.intp)
    if isinstance(src, np.ndarray):
        s = src.reshape(-1) if src.ndim == 0 else src
        src = s[tuple(slice(0, n) for n in i.shape)].astype(x.dtype, copy=False)
    grids = np.indices(i.shape, sparse=True) if i.ndim else ()
    key = tuple(i if d == dim else grids[d] for d in range(i.ndim))
    return out, o, key, src


_UFUNC = {"add": np.add, "sum": np.add, "mean": np.add, "multiply": np.multiply,
          "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _scatter(dt, x, idx, src, dim, reduce=None):
    out, o, key, v = _scatter_prep(x, idx, src, dim)
    if reduce is None:
        o[key] = v
    else:
        _UFUNC[reduce].at(o, key, v)
    return out


def _scatter_add(dt, x, idx, src, dim):
    # halves accumulate in float32, rounded once at the end (torch's and ember's values)
    if _half(x.dtype):
        return _scatter(dt, x.astype(_F32), idx, src.astype(_F32), dim, "add").astype(x.dtype)
    return _scatter(dt, x, idx, src, dim, "add")


def _identity(reduce, dt):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dt.kind in "fcV":
        return np.inf if reduce == "amin" else -np.inf
    if dt == bool:
        return reduce == "amin"
    return np.iinfo(dt).max if reduce == "amin" else np.iinfo(dt).min


def _scatter_reduce(dt, x, idx, src, dim, reduce, include_self):
    out, o, key, v = _scatter_prep(x, idx, src, dim)
    calc = o.astype(_F32) if _half(o.dtype) else o
    if not include_self:
        calc[key] = _identity(reduce, o.dtype)
    _UFUNC[reduce].at(calc, key, np.asarray(v).astype(calc.dtype, copy=False))
    if reduce == "mean":
        cnt = np.full(o.shape, 1 if include_self else 0, dtype=np.int64)
        np.add.at(cnt, key, 1)
        safe = np.maximum(cnt, 1)
        calc[...] = calc // safe if calc.dtype.kind in "iub" else calc / safe
    if calc is not o:
        o[...] = calc.astype(o.dtype)
    return out


def _matmul(dt, a, b):
    w = _work(dt)
    return matmul(a.astype(w, copy=False), b.astype(w, copy=False))


# ---- creation ----------------------------------------------------------------------------
def _full(dt, *, shape, fill_value, dtype=None, device=None):
    return np.full(tuple(shape), fill_value, dtype=np.dtype(dtype) if dtype is not None else dt)


def _arange(dt, *, start, end, step, dtype=None, device=None):
    target = np.dtype(dtype) if dtype is not None else dt
    if any(isinstance(v, float) for v in (start, end, step)):
        n = max(0, int(np.ceil((end - start) / step)))
    else:  # exact integer arithmetic
        n = max(0, (end - start + step - 1) // step if step > 0 else (start - end - step - 1)
                // -step)
    if target.kind not in "iub":
        return (start + np.arange(n, dtype=np.float64) * step).astype(target)
    return np.arange(start, start + n * step, step, dtype=np.int64)[:n]


def _tensor(dt, *, data, dtype=None, device=None):
    return np.array(data, dtype=np.dtype(dtype) if dtype is not None else dt)


# ---- the counter-based RNG (splitmix64 of seed and counter; same numbers as ember) ---------
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(z):
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _rng_uniform(dt, seed, offset, shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    key = np.asarray(seed).astype(np.uint64) * _GOLDEN
    counters = np.arange(n, dtype=np.uint64) + np.asarray(offset).astype(np.uint64)
    bits = _splitmix64(_splitmix64(counters + key))
    target = np.dtype(dtype)
    if target == np.float64:
        u = (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    else:  # 24 bits: exact in float32, never rounds up to 1
        u = ((bits >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)).astype(target)
    return u.reshape(tuple(shape))


STRUCTURAL = {
    "_to_copy": _to_copy, "_to_device": lambda dt, x, backend=None: x.copy(),
    "view_dtype": lambda dt, x, dtype: x.view(np.dtype(dtype)),
    "complex": _complex, "real": lambda dt, x: x.real,
    "imag": lambda dt, x: x.imag, "conj": lambda dt, x: np.conj(x),
    "view_as_real": _view_as_real, "view_as_complex": _view_as_complex,
    "sum": _sum, "prod": _prod,
    "amax": lambda dt, x, dims=None, keepdim=False: np.amax(x, axis=dims, keepdims=keepdim),
    "amin": lambda dt, x, dims=None, keepdim=False: np.amin(x, axis=dims, keepdims=keepdim),
    "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
    "any": lambda dt, x, dims, keepdim: np.any(x, axis=dims, keepdims=keepdim),
    "all": lambda dt, x, dims, keepdim: np.all(x, axis=dims, keepdims=keepdim),
    "cumsum": _scan(np.add), "cumprod": _scan(np.multiply),
    "cummax": _cum_extreme(np.maximum),
    "cummin": _cum_extreme(np.minimum),
    "view": lambda dt, x, shape: np.reshape(x, shape),
    "_reshape_copy": lambda dt, x, shape: np.reshape(x, shape).copy(),
    "permute": lambda dt, x, dims: np.transpose(x, dims),
    "expand": _expand,
    "slice": lambda dt, x, key: x[_key(key)],
    "select": lambda dt, x, key: x[_key(key)],
    "as_strided": _as_strided, "cat": _cat, "pad": _pad,
    "flip": lambda dt, x, dims: np.flip(x, dims) if dims else x,
    "index": _index, "index_put": _index_put, "gather": _gather, "scatter": _scatter,
    "scatter_add": _scatter_add,
    "scatter_reduce": _scatter_reduce, "matmul": _matmul,
    "_rng_uniform": _rng_uniform, "_stop_gradient": lambda dt, x: x,
    "full": _full, "arange": _arange, "tensor": _tensor,
}
