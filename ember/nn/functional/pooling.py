"""Pooling: max/avg (1-3d), adaptive avg/max, fractional max (2-3d), LP pooling, max_unpool.

Argument checks and composites over the primitives of ``ember.ops.nn.pooling`` (max
pooling with its indices, average pooling, adaptive max pooling).  Adaptive average
pooling is separable: window sums along one dimension at a time (never a 0/1 matrix
product, which turns one inf into NaNs).  Fractional max pooling is a composite too: its
windows come from the random samples as torch computes them; it picks torch's maximum of
each window without grad and gathers it, so the gradient is the gather's.
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ..._core.state import SHARED, STATE
from ..._core.tensor import host_tensor
from ...autograd.grad_mode import no_grad
from ...ops._helpers import apply, type_name
from ...ops.blas import matmul
from ...ops.creation import full
from ...ops.indexing import index_select
from ...ops.nn.pooling import ADAPTIVE_MAX, AVG_POOL, MAX_POOL, MAX_UNPOOL, _bounds, _out_size
from ...ops.pointwise import where
from ...ops.random import rand
from ...ops.shape import cat

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


def _tup(v, n, name):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) != n:
            raise RuntimeError(f"{name} must either be a single int, or a tuple of {n} ints")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _needs_grad(t):
    # forward AD derives max pooling's tangent from its vjp, which reads the indices
    return (t.requires_grad and STATE.grad_enabled) or SHARED.forward


def _first_empty(shape, start):
    """The first dimension from ``start`` on with size 0, or None."""
    return next((d for d in range(start, len(shape)) if shape[d] == 0), None)


def _check_pool_input(input, n, name, impl1d=False):
    """torch's shape checks of max/avg pooling: every dimension but the batch must be
    non-empty (channels too); each kernel words it its own way, and 1d pooling is 2d
    pooling of the input unsqueezed at -2 except for max_pool1d's own kernel."""
    shape = list(input.shape)
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}: Expected {n + 1}D or {n + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got: {shape}")
    if _first_empty(shape, input.dim() - n - 1) is None:
        return
    if n == 3:
        fn = "max_pool3d_with_indices_out_cpu_template()" if name == "max_pool3d" else \
            "avg_pool3d()"
        # torch prints the empty dimension's size where it means its index
        raise RuntimeError(f"{fn}: Expected input's non-batch dimensions to have positive "
                           f"length, but input has a shape of {shape} and non-batch "
                           f"dimension 0 has length zero!")
    if impl1d:
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{shape}")
    if n == 1:
        shape.insert(-1, 1)
    raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                       f"for input, but got:{shape}")


def _pool_args(n, name, input, kernel_size, stride, padding, dilation, ceil_mode, impl1d=False):
    _check_pool_input(input, n, name, impl1d)
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
    # torch's max_pool1d checks the shape itself, then runs a kernel of its own (floats only)
    # when no indices are needed; the rest is max_pool2d of the input unsqueezed at -2
    ks, st, pd, dl = _pool_args(n, name, input, kernel_size, stride, padding, dilation,
                                ceil_mode, n == 1 and not return_indices)
    need = bool(return_indices) or _needs_grad(input)
    _gate(input, name if n > 1 else "max_pool2d" if need else "max_pool1d_impl",
          "bc" if n > 1 or need else "biuc")
    out, idx = apply(MAX_POOL, (input,), {"ks": ks, "stride": st, "pad": pd, "dil": dl,
                                         "ceil": bool(ceil_mode), "need_idx": need})
    return (out, idx) if return_indices else out


@overridable
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """1D max pooling returning (output, indices)."""
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


@overridable
def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """2D max pooling returning (output, indices)."""
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


@overridable
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
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
    shape = list(input.shape)
    if name.startswith("adaptive_avg"):
        if all(o == 1 for o in osz):
            return L, osz  # torch takes the mean, with no check
        if n == 1:  # torch pools the input unsqueezed at -2 in 2d
            name, shape = "adaptive_avg_pool2d", shape[:-1] + [1] + shape[-1:]
        # 2d checks the spatial dims only, 3d (and max pooling) every dim but the first
        start = len(shape) - 2 if name.endswith("2d") else 1
    else:
        start = 1
    d = _first_empty(shape, start)
    if d is not None:
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {shape} with dimension {d} being "
                           f"empty")
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
    sel = index_select(x, dim, host_tensor(idx.astype(np.int64), x))
    sel = sel.reshape(shape[:dim] + (o, km) + shape[dim + 1:])
    mask = host_tensor(valid.reshape((o, km) + (1,) * (len(shape) - dim - 1)), x)
    total = where(mask, sel, 0).sum(dim + 1)
    counts = (e - s).astype(np.float64).reshape((o,) + (1,) * (len(shape) - dim - 1))
    return total / host_tensor(counts.astype(x.dtype.np), x)


def _adaptive_avg(input, output_size, n, name):
    L, osz = _adaptive_sizes(input, output_size, n, name)
    _gate(input, "adaptive_avg_pool3d_cpu" if n == 3 else "adaptive_avg_pool2d",
          "bi" if all(o == 1 for o in osz) else "bic", check_empty=False)
    if not input.numel() and not (input.dtype.is_floating_point or input.dtype.is_complex):
        # torch returns an empty result of the input's dtype without looking at it
        return host_tensor(np.zeros(tuple(input.shape[:input.dim() - n]) + tuple(osz),
                             dtype=input.dtype.np), input)
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
    shape = list(input.shape) + [1] * (n == 1)  # 1d unpools the input unsqueezed at -1
    d = _first_empty(shape, 1)
    if d is not None:
        raise RuntimeError(f"max_unpooling{max(n, 2)}d_forward_out_cpu(): Expected input to have "
                           f"non-zero size for non-batch dimensions, but got {shape} with "
                           f"dimension {d} being empty.")
    return MAX_UNPOOL(input, indices, osz=tuple(int(o) for o in osz))


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


# ---- fractional max pooling --------------------------------------------------------------

def _fractional_sizes(n, name, input, kernel_size, output_size, output_ratio):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if n == 2 and not isinstance(output_ratio, (list, tuple)):
            # torch's 2d function takes len() of the ratio (its module passes a pair)
            raise TypeError(f"object of type '{type(output_ratio).__name__}' has no len()")
        if n == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             f"of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else \
            (output_ratio,) * n
        output_size = [int(input.size(d - n) * r) for d, r in enumerate(ratio)]
    many = "tuple of Ints" if n == 2 else "tuple of three Ints"
    ks = tuple(kernel_size) if isinstance(kernel_size, (list, tuple)) else (kernel_size,) * n
    osz = tuple(output_size) if isinstance(output_size, (list, tuple)) else (output_size,) * n
    if len(ks) != n:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or {many}")
    if len(osz) != n:
        raise RuntimeError(f"{name}: output_size must either be a single Int or {many}")
    return tuple(int(k) for k in ks), tuple(int(o) for o in osz)


def _check_fractional(n, name, input, ks, osz, samples):
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    d = _first_empty(input.shape, 1)  # torch never checks the first dim, batch or not
    if d is not None:
        raise RuntimeError(f"{name}{'' if n == 2 else '_out'}(): Expected input to have "
                           f"non-zero size for non-batch dimensions, but got"
                           f"{list(input.shape)} with dimension {d} being empty.")
    what = ("height", "width") if n == 2 else ("time", "height", "width")
    for w, o, k, l in zip(what, osz, ks, input.shape[-n:]):
        # torch allows the last window to end at the input's end in 2d, not in 3d
        if o + k - 1 > l or (n == 3 and o + k - 1 == l):
            raise RuntimeError(f"{name}{'' if n == 2 else '_out'}(): pool {w} {k} too large "
                               f"relative to input {w} {l}")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.size(2) != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got "
                           f"{samples.size(2)}.")
    if samples.size(1) != input.size(-n - 1):
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if input.dim() == n + 2 and samples.size(0) < input.size(0):
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")


def _window_starts(u, L, k, o):
    """Start of each of the ``o`` windows of size ``k`` along a dim of size ``L``, for each
    sample in ``u`` (one in [0, 1) per plane): torch's sequence, computed in the samples'
    dtype so that its roundings, hence the windows, are torch's."""
    last = full(tuple(u.shape) + (min(o, 1),), L - k, dtype=_dt.int64)
    if o <= 1:
        return last
    np_dt = u.dtype.np
    alpha = host_tensor(np.asarray(np.asarray(L - k, np_dt) / np.asarray(o - 1, np_dt)), u)
    i = host_tensor(np.arange(o - 1).astype(np_dt), u)
    u = u.unsqueeze(-1)
    return cat((((i + u) * alpha).long() - (u * alpha).long(), last), -1)


def _fractional_max(n, name, input, kernel_size, output_size, output_ratio, return_indices,
                    samples):
    ks, osz = _fractional_sizes(n, name, input, kernel_size, output_size, output_ratio)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}_out_frame\" not implemented for "
                                  f"'{type_name(input.dtype.np)}'")
    batched = input.dim() == n + 2
    if samples is None:
        samples = rand(input.size(0) if batched else 1, input.size(-n - 1), n,
                       dtype=input.dtype, device=input.device)
    _check_fractional(n, name, input, ks, osz, samples)
    u = samples[:input.size(0)] if batched else samples[0]  # one row of samples per plane
    L, lead = tuple(input.shape[-n:]), tuple(input.shape[:-n])
    # the sample of each spatial dim: torch's 2d rows are (w, h), its 3d rows (t, h, w)
    cols = (1, 0) if n == 2 else (0, 1, 2)
    step = [int(np.prod(L[d + 1:], dtype=np.int64)) for d in range(n)]
    start = 0  # (*lead, *osz): flat input position where each window starts
    for d in range(n):
        s = _window_starts(u[..., cols[d]], L[d], ks[d], osz[d])
        start = start + s.reshape(lead + tuple(osz[d] if e == d else 1 for e in range(n))) \
            * step[d]
    if any(k <= 0 for k in ks):  # empty windows: torch leaves -inf and the window's start
        out = input.new_full(lead + osz, float("-inf"))
        return (out, start) if return_indices else out
    grid = np.indices(ks).reshape(n, -1)
    offsets = host_tensor(sum(grid[d] * step[d] for d in range(n)).astype(np.int64), input)
    pos = start.unsqueeze(-1) + offsets  # (*lead, *osz, K): every window element
    per = int(np.prod(osz, dtype=np.int64))  # explicit sizes: a batch may be empty
    plane = input.reshape(lead + (int(np.prod(L, dtype=np.int64)),))
    with no_grad():
        vals = plane.gather(-1, pos.reshape(lead + (per * offsets.numel(),))).reshape(pos.shape)
        nan = vals.isnan()
        # the first maximum, but the last NaN: torch's scan lets every NaN win
        last_nan = (offsets.numel() - 1) - nan.flip(-1).to(_dt.uint8).argmax(-1)
        k = where(nan.any(-1), last_nan, vals.argmax(-1))
        idx = pos.gather(-1, k.unsqueeze(-1)).squeeze(-1)
    out = plane.gather(-1, idx.reshape(lead + (per,))).reshape(lead + osz)
    return (out, idx) if return_indices else out


@overridable
def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Applies 2D fractional max pooling over an input signal composed of several input
    planes, returning (output, indices)."""
    return _fractional_max(2, "fractional_max_pool2d", input, kernel_size, output_size,
                           output_ratio, True, _random_samples)


@overridable
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Applies 3D fractional max pooling over an input signal composed of several input
    planes, returning (output, indices)."""
    return _fractional_max(3, "fractional_max_pool3d", input, kernel_size, output_size,
                           output_ratio, True, _random_samples)


@overridable
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Applies 2D fractional max pooling over an input signal composed of several input
    planes.

    The max-pooling operation is applied in kH x kW regions by a stochastic step size
    determined by the target output size (Ben Graham, Fractional MaxPooling)."""
    return _fractional_max(2, "fractional_max_pool2d", input, kernel_size, output_size,
                           output_ratio, return_indices, _random_samples)


@overridable
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Applies 3D fractional max pooling over an input signal composed of several input
    planes.

    The max-pooling operation is applied in kT x kH x kW regions by a stochastic step size
    determined by the target output size (Ben Graham, Fractional MaxPooling)."""
    return _fractional_max(3, "fractional_max_pool3d", input, kernel_size, output_size,
                           output_ratio, return_indices, _random_samples)
