"""Pooling: max/avg (1-3d), adaptive avg/max, LP pooling, max_unpool.

Max pooling (fixed and adaptive windows) is one primitive producing values and
flat indices into each input plane (PyTorch's index convention); its gradient is
the primitive ``max_pool_backward`` (a scatter-add by index, done with one
bincount), whose own gradient is a gather, so double backward works.  Average
pooling sums windows in one kernel; its gradient spreads ``g / divisor`` back
with ``col2im``.  Adaptive average pooling is separable: window sums along one
dimension at a time (never a 0/1 matrix product, which turns one inf into NaNs).
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ..._core.state import STATE
from ..._core.tensor import wrap
from ...ops._helpers import Op, apply, type_name
from ...ops.blas import matmul
from ...ops.indexing import index_select
from ...ops.pointwise import where
from .conv import _compute, _windows, col2im

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _tup(v, n, name):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) != n:
            raise RuntimeError(f"{name} must either be a single int, or a tuple of {n} ints")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _out_size(L, k, s, p, d, ceil):
    num = L + 2 * p - d * (k - 1) - 1
    o = (num + (s - 1 if ceil else 0)) // s + 1
    if ceil and (o - 1) * s >= L + p:
        o -= 1
    return o


def _geometry(x_shape, ks, stride, pad, dil, ceil):
    """Output sizes and the (lo, hi) padding whose windows produce exactly those outputs."""
    n = len(ks)
    L = x_shape[-n:]
    outs = tuple(_out_size(*a, ceil) for a in zip(L, ks, stride, pad, dil))
    pads = tuple((p, max(0, (o - 1) * s + d * (k - 1) + 1 - l - p))
                 for l, k, s, p, d, o in zip(L, ks, stride, pad, dil, outs))
    return outs, pads


def _crop(win, outs, n):
    return win[(Ellipsis,) + tuple(slice(0, o) for o in outs) + (slice(None),) * n]


# ---- max pooling -------------------------------------------------------------------------

def _fill_low(dt):
    return -np.inf if dt.kind in "fV" else np.iinfo(dt).min


def _max_pool_kernel(xp, x, ks, stride, pad, dil, ceil, need_idx):
    n = len(ks)
    a, back = _compute(x)
    outs, pads = _geometry(a.shape, ks, stride, pad, dil, ceil)
    lead = a.ndim - n
    if any(p for pr in pads for p in pr):
        a = xp.pad(a, ((0, 0),) * lead + pads, constant_values=_fill_low(a.dtype))
    win = _crop(_windows(xp, a, ks, dil, ((0, 0),) * n, stride), outs, n)
    if not need_idx:
        r = win.max(axis=tuple(range(-n, 0)))
        return (r if back is None else r.astype(back)), xp.zeros((0,), dtype=np.int64)
    offsets = list(np.ndindex(*ks))
    views = [win[(Ellipsis,) + off] for off in offsets]
    r = views[0].copy()
    for v in views[1:]:
        xp.maximum(r, v, out=r)
    kt = np.int8 if len(views) < 128 else np.int64
    if a.dtype.kind == "f" and xp.isnan(r).any():
        # PyTorch takes the last NaN of a window; the equality test below cannot see NaNs
        r = views[0].copy()
        k = xp.zeros(r.shape, dtype=kt)
        for j, v in enumerate(views[1:], 1):
            upd = (v > r) | (v != v)
            xp.copyto(r, v, where=upd)
            xp.copyto(k, j, where=upd)
    else:
        # the first offset holding the maximum, as PyTorch's strict '>' scan picks
        k = xp.full(r.shape, len(views) - 1, dtype=kt)
        for j in range(len(views) - 2, -1, -1):
            xp.copyto(k, j, where=views[j] == r)
    L = x.shape[-n:]
    strides = [int(np.prod(L[i + 1:], dtype=np.int64)) for i in range(n)]
    base = 0
    for i in range(n):
        o = np.arange(outs[i]).reshape((-1,) + (1,) * (n - 1 - i))
        base = base + (o * stride[i] - pad[i]) * strides[i]
    table = np.array([sum(o[i] * dil[i] * strides[i] for i in range(n)) for o in offsets],
                     dtype=np.int64)
    idx = table[k]
    idx += base
    return (r if back is None else r.astype(back)), idx


def _max_pool_vjp(ctx, g, x, ks, stride, pad, dil, ceil, need_idx):
    return max_pool_backward(g[0], ctx.out[1], ctx.in_meta[0][0], len(ks))


def _max_pool_shape(x, ks, stride, pad, dil, ceil, need_idx):
    s = x.shape[:-len(ks)] + _geometry(x.shape, ks, stride, pad, dil, ceil)[0]
    return (s, x.dtype), (s if need_idx else (0,), _dt.int64)


MAX_POOL = Op("max_pool", _max_pool_kernel, _max_pool_vjp, save_inputs=False, save_output=True,
              n_out=2, nondiff_outputs=(1,), category="nn", shape=_max_pool_shape)


def _max_pool_backward_kernel(xp, g, idx, in_shape, n):
    a, back = _compute(g)
    lead = int(np.prod(in_shape[:-n], dtype=np.int64))
    plane = int(np.prod(in_shape[-n:], dtype=np.int64))
    per = int(np.prod(idx.shape[idx.ndim - n:], dtype=np.int64))  # no -1: lead may be 0
    base = (np.arange(lead, dtype=np.int64) * plane)[:, None] + idx.reshape(lead, per)
    r = xp.bincount(base.ravel(), weights=a.ravel(), minlength=lead * plane)
    r = r.astype(back or a.dtype, copy=False).reshape(in_shape)
    return r


def _max_pool_backward_vjp(ctx, gg, g, idx, in_shape, n):
    lead = in_shape[:-n]
    flat = gg.reshape(lead + (int(np.prod(in_shape[-n:], dtype=np.int64)),))
    out_shape = ctx.in_meta[0][0]
    per = int(np.prod(out_shape[len(out_shape) - n:], dtype=np.int64))
    return flat.gather(-1, idx.reshape(lead + (per,))).reshape(out_shape), None


MAX_POOL_BACKWARD = Op("max_pool_backward", _max_pool_backward_kernel, _max_pool_backward_vjp,
                       save_inputs=(1,), category="nn",
                       shape=lambda g, idx, in_shape, n: (tuple(in_shape), g.dtype))


def max_pool_backward(g, idx, in_shape, n):
    return apply(MAX_POOL_BACKWARD, (g, idx), {"in_shape": tuple(in_shape), "n": n})


def _needs_grad(t):
    return t.requires_grad and STATE.grad_enabled


def _check_pool_input(input, n, name):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got: "
                           f"{list(input.shape)}")
    if any(s == 0 for s in input.shape[-n - 1:]) and input.dim() == n + 1 or \
            any(s == 0 for s in input.shape[-n:]):
        raise RuntimeError(f"{name}: Expected input's non-batch dimensions to have positive "
                           f"length, but input has a shape of {list(input.shape)}")


def _pool_args(n, name, input, kernel_size, stride, padding, dilation, ceil_mode):
    _check_pool_input(input, n, name)
    ks = _tup(kernel_size, n, f"{name}: kernel_size")
    st = ks if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        _tup(stride, n, f"{name}: stride")
    pd = _tup(padding, n, f"{name}: padding")
    dl = _tup(dilation, n, f"{name}: dilation")
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"{name}(): kernel_size must be greater than zero, but got {ks}")
    if any(s <= 0 for s in st):
        raise RuntimeError(f"{name}(): stride should be greater than zero, but got {st}")
    if any(d <= 0 for d in dl):
        raise RuntimeError(f"{name}(): dilation should be greater than zero, but got {dl}")
    for p, k, d in zip(pd, ks, dl):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    L = tuple(input.shape[-n:])
    outs = tuple(_out_size(*a, ceil_mode) for a in zip(L, ks, st, pd, dl))
    if any(o <= 0 for o in outs):
        C = input.shape[-n - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (C,) + L))}). Calculated "
                           f"output size: ({'x'.join(map(str, (C,) + outs))}). Output size is "
                           f"too small")
    return ks, st, pd, dl


def _gate(input, kernel, reject, allowed=None, check_empty=True):
    """torch's dtype coverage of its pooling kernels."""
    d = input._data
    if not d.size and not check_empty:
        return
    k = d.dtype.kind
    if k in "Vf" and allowed is None:
        return
    if allowed is not None and d.dtype.name in allowed:
        return
    if allowed is not None or (k if k != "u" else "i") in reject or k in reject:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{type_name(d.dtype)}'")


def _max_pool(n, name, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    ks, st, pd, dl = _pool_args(n, name, input, kernel_size, stride, padding, dilation,
                                ceil_mode)
    _gate(input, "max_pool1d_impl" if n == 1 else name, "biuc" if n == 1 else "bc")
    need = bool(return_indices) or _needs_grad(input)
    out, idx = apply(MAX_POOL, (input,), {"ks": ks, "stride": st, "pad": pd, "dil": dl,
                                         "ceil": bool(ceil_mode), "need_idx": need})
    return (out, idx) if return_indices else out


@overridable
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """1D max pooling returning (output, indices)."""
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


@overridable
def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """2D max pooling returning (output, indices)."""
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


@overridable
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """3D max pooling returning (output, indices)."""
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


@overridable
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Applies a 1D max pooling over an input signal composed of several input planes."""
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


@overridable
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Applies a 2D max pooling over an input signal composed of several input planes."""
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


@overridable
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Applies a 3D max pooling over an input signal composed of several input planes."""
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


# ---- average pooling ---------------------------------------------------------------------

def _divisor(L, ks, stride, pad, outs, include_pad, override):
    if override:
        return None
    parts = []
    for l, k, s, p, o in zip(L, ks, stride, pad, outs):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, l + p)
        if include_pad:
            parts.append(end - start)
        else:
            parts.append(np.minimum(end, l) - np.maximum(start, 0))
    d = parts[0]
    for q in parts[1:]:
        d = d[..., None] * q
    return d


def _avg_pool_kernel(xp, x, ks, stride, pad, ceil, include_pad, override):
    n = len(ks)
    if x.dtype.kind not in "fV":
        raise NotImplementedError(f"\"avg_pool2d\" not implemented for '{type_name(x.dtype)}'")
    a, back = _compute(x)
    outs, pads = _geometry(a.shape, ks, stride, pad, (1,) * n, ceil)
    win = _crop(_windows(xp, a, ks, (1,) * n, pads, stride), outs, n)
    s = win.sum(axis=tuple(range(-n, 0)))
    div = _divisor(a.shape[-n:], ks, stride, pad, outs, include_pad, override)
    s = s / (override if div is None else div.astype(s.dtype))
    return s if back is None else s.astype(back)


def _avg_pool_vjp(ctx, g, x, ks, stride, pad, ceil, include_pad, override):
    n = len(ks)
    shape = ctx.in_meta[0][0]
    outs, pads = _geometry(shape, ks, stride, pad, (1,) * n, ceil)
    div = _divisor(shape[-n:], ks, stride, pad, outs, include_pad, override)
    g = g / (override if div is None else wrap(div.astype(g._data.dtype)))
    lead = shape[:-n]
    g4 = g.reshape((-1, 1) + outs) if len(lead) != 2 else g
    cols = g4.transpose(0, 1).reshape((g4.shape[1],) + (1,) * n + (g4.shape[0],) + outs)
    cols = cols.expand((g4.shape[1],) + ks + (g4.shape[0],) + outs)
    r = col2im(cols, shape[-n:], ks, (1,) * n, pads, stride)
    return r.reshape(shape)


def _avg_pool_shape(x, ks, stride, pad, ceil, include_pad, override):
    n = len(ks)
    return x.shape[:-n] + _geometry(x.shape, ks, stride, pad, (1,) * n, ceil)[0], x.dtype


AVG_POOL = Op("avg_pool", _avg_pool_kernel, _avg_pool_vjp, save_inputs=False, category="nn",
              shape=_avg_pool_shape)


def _avg_pool(n, name, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    ks, st, pd, _ = _pool_args(n, name, input, kernel_size, stride, padding, 1, ceil_mode)
    if n == 3:
        _gate(input, "avg_pool3d_out_frame", "bc", allowed=("float32", "float64", "int64"))
        L = tuple(input.shape[-3:])
        if any(l < k for l, k in zip(L, ks)):
            raise RuntimeError(f"input image (T: {L[0]} H: {L[1]} W: {L[2]}) smaller than "
                               f"kernel size (kT: {ks[0]} kH: {ks[1]} kW: {ks[2]})")
    else:
        _gate(input, "avg_pool2d", "bc", allowed=("float16", "bfloat16", "float32", "float64",
                                                  "int64"))
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    return apply(AVG_POOL, (input,), {"ks": ks, "stride": st, "pad": pd, "ceil": bool(ceil_mode),
                                      "include_pad": bool(count_include_pad),
                                      "override": divisor_override})


@overridable
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Applies a 1D average pooling over an input signal composed of several input planes."""
    return _avg_pool(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


@overridable
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Applies 2D average-pooling operation in kH x kW regions by step size sH x sW steps."""
    return _avg_pool(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


@overridable
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Applies 3D average-pooling operation in kT x kH x kW regions by step size sT x sH x sW."""
    return _avg_pool(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ---- adaptive pooling --------------------------------------------------------------------

def _bounds(L, o):
    i = np.arange(o)
    return (i * L) // o, -((-(i + 1) * L) // o)


def _adaptive_sizes(input, output_size, n, name):
    if input.dim() < n + 1:
        raise ValueError(f"Input dimension should be at least {n + 1}")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got "
                           f"{list(input.shape)}")
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != n:
            raise RuntimeError(f"{name}: internal error: output_size.size() must be {n}")
        osz = output_size
    else:
        osz = (output_size,) * n
    L = tuple(input.shape[-n:])
    osz = tuple(l if o is None else int(o) for o, l in zip(osz, L))
    for d in range(input.dim() - n, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    return L, osz


def apply_separable(x, mats):
    """Apply matrix ``mats[i]`` (out_i, in_i) along spatial dim i of ``x`` (None: leave it)."""
    n = len(mats)
    lead = tuple(x.shape[:-n])
    for i, m in enumerate(mats):
        if m is None:
            continue
        cur = tuple(x.shape[-n:])
        before = int(np.prod(cur[:i], dtype=np.int64))
        after = int(np.prod(cur[i + 1:], dtype=np.int64))
        y = matmul(m, x.reshape(lead + (before, cur[i], after)))
        x = y.reshape(lead + cur[:i] + (m.shape[0],) + cur[i + 1:])
    return x


def _window_mean(x, dim, L, o):
    """Means of the adaptive windows of ``x`` along ``dim`` (size ``L``) into ``o`` outputs.

    Windows are summed, never multiplied by a 0/1 matrix: one inf in the input must not
    make 0 * inf = NaN in the windows that do not contain it (torch's result)."""
    if o == 1:
        return x.mean(dim, keepdim=True)
    shape = tuple(x.shape)
    if L % o == 0:  # equal, disjoint windows
        return x.reshape(shape[:dim] + (o, L // o) + shape[dim + 1:]).mean(dim + 1)
    s, e = _bounds(L, o)
    km = int((e - s).max())
    raw = s[:, None] + np.arange(km)
    valid = raw < e[:, None]
    idx = np.where(valid, raw, (e - 1)[:, None]).reshape(-1)
    sel = index_select(x, dim, wrap(idx.astype(np.int64)))
    sel = sel.reshape(shape[:dim] + (o, km) + shape[dim + 1:])
    mask = wrap(valid.reshape((o, km) + (1,) * (len(shape) - dim - 1)))
    total = where(mask, sel, 0).sum(dim + 1)
    counts = (e - s).astype(np.float64).reshape((o,) + (1,) * (len(shape) - dim - 1))
    return total / wrap(counts.astype(x._data.dtype))


def _adaptive_avg(input, output_size, n, name):
    L, osz = _adaptive_sizes(input, output_size, n, name)
    _gate(input, "adaptive_avg_pool3d_cpu" if n == 3 else "adaptive_avg_pool2d",
          "bi" if all(o == 1 for o in osz) else "bic", check_empty=False)
    if not input._data.size and input._data.dtype.kind not in "fcV":
        # torch returns an empty result of the input's dtype without looking at it
        return wrap(np.zeros(tuple(input.shape[:input.dim() - n]) + tuple(osz),
                             dtype=input._data.dtype))
    x = input
    for i, (l, o) in enumerate(zip(L, osz)):
        if l != o:
            x = _window_mean(x, input.dim() - n + i, l, o)
    return input.clone() if x is input else x


@overridable
def adaptive_avg_pool1d(input, output_size):
    """Applies a 1D adaptive average pooling over an input signal."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


@overridable
def adaptive_avg_pool2d(input, output_size):
    """Applies a 2D adaptive average pooling over an input signal."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


@overridable
def adaptive_avg_pool3d(input, output_size):
    """Applies a 3D adaptive average pooling over an input signal."""
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def _adaptive_max_kernel(xp, x, osz):
    n = len(osz)
    a, back = _compute(x)
    L = a.shape[-n:]
    idxs = []
    for i, (l, o) in enumerate(zip(L, osz)):
        s, e = _bounds(l, o)
        km = int((e - s).max())
        # windows padded to a common length by repeating their last element
        idxs.append(np.minimum(s[:, None] + np.arange(km), (e - 1)[:, None]))
    grids = []
    for i, ix in enumerate(idxs):
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = ix.shape
        grids.append(ix.reshape(shape))
    sel = a[(Ellipsis,) + tuple(grids)]                 # (..., *osz, *kmax)
    kmax = tuple(ix.shape[1] for ix in idxs)
    flat = sel.reshape(sel.shape[:a.ndim] + (int(np.prod(kmax)),))  # no -1: batch may be 0
    k = flat.argmax(axis=-1)
    r = xp.take_along_axis(flat, k[..., None], axis=-1)[..., 0]
    kidx = np.unravel_index(k, kmax)
    pos = []
    for i, ix in enumerate(idxs):
        o = np.arange(osz[i]).reshape((-1,) + (1,) * (n - 1 - i))
        pos.append(ix[o, kidx[i]])
    idx = np.ravel_multi_index(tuple(pos), L) if n > 1 else pos[0]
    return (r if back is None else r.astype(back)), idx.astype(np.int64)


def _adaptive_max_vjp(ctx, g, x, osz):
    return max_pool_backward(g[0], ctx.out[1], ctx.in_meta[0][0], len(osz))


def _adaptive_max_shape(x, osz):
    s = x.shape[:-len(osz)] + tuple(osz)
    return (s, x.dtype), (s, _dt.int64)


ADAPTIVE_MAX = Op("adaptive_max_pool", _adaptive_max_kernel, _adaptive_max_vjp, n_out=2,
                  save_inputs=False, save_output=True, nondiff_outputs=(1,), category="nn",
                  shape=_adaptive_max_shape)


def _adaptive_max(input, output_size, return_indices, n, name):
    _, osz = _adaptive_sizes(input, output_size, n, name)
    _gate(input, "adaptive_max_pool3d_cpu" if n == 3 else "adaptive_max_pool2d", "biuc")
    out, idx = apply(ADAPTIVE_MAX, (input,), {"osz": osz})
    return (out, idx) if return_indices else out


@overridable
def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """1D adaptive max pooling returning (output, indices)."""
    return _adaptive_max(input, output_size, True, 1, "adaptive_max_pool1d")


@overridable
def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """2D adaptive max pooling returning (output, indices)."""
    return _adaptive_max(input, output_size, True, 2, "adaptive_max_pool2d")


@overridable
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """3D adaptive max pooling returning (output, indices)."""
    return _adaptive_max(input, output_size, True, 3, "adaptive_max_pool3d")


@overridable
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Applies a 1D adaptive max pooling over an input signal."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


@overridable
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Applies a 2D adaptive max pooling over an input signal."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


@overridable
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Applies a 3D adaptive max pooling over an input signal."""
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


# ---- max_unpool, lp_pool -----------------------------------------------------------------

def _max_unpool(n, input, indices, kernel_size, stride, padding, output_size):
    ks = _tup(kernel_size, n, "kernel_size")
    st = ks if stride is None else _tup(stride, n, "stride")
    pd = _tup(padding, n, "padding")
    L = tuple(input.shape[-n:])
    default = tuple((l - 1) * s - 2 * p + k for l, s, p, k in zip(L, st, pd, ks))
    if output_size is None:
        osz = default
    else:
        osz = tuple(output_size)[-n:]
        for o, dflt, s in zip(osz, default, st):
            if not dflt - s < o < dflt + s:
                raise ValueError(f"invalid output_size \"{list(output_size)}\" (dim 0 must be "
                                 f"between {dflt - s} and {dflt + s})")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    lead = tuple(input.shape[:-n])
    plane = int(np.prod(osz))
    idx = indices.reshape(lead + (-1,))
    if idx.numel() and (int(idx.max()) >= plane or int(idx.min()) < 0):
        raise RuntimeError(f"Found an invalid max index: {int(idx.max())} (output volumes are of "
                           f"size {'x'.join(map(str, osz))}")
    from ...ops.creation import zeros
    out = zeros(lead + (plane,), dtype=input.dtype)
    return out.scatter(-1, idx, input.reshape(lead + (-1,))).reshape(lead + osz)


@overridable
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Compute a partial inverse of MaxPool1d."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


@overridable
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Compute a partial inverse of MaxPool2d."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


@overridable
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Compute a partial inverse of MaxPool3d."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def _lp_pool(n, input, norm_type, kernel_size, stride, ceil_mode):
    ks = _tup(kernel_size, n, "kernel_size")
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[n - 1]
    if stride is not None:
        out = pool(input.pow(norm_type), ks, stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), ks, padding=0, ceil_mode=ceil_mode)
    k = int(np.prod(ks))
    return (out.sign() * out.abs().clamp(min=0)).mul(k).pow(1.0 / norm_type)


@overridable
def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Apply a 1D power-average pooling over an input signal."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


@overridable
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Apply a 2D power-average pooling over an input signal."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


@overridable
def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Apply a 3D power-average pooling over an input signal."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)
