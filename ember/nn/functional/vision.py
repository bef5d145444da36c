"""Vision functions: pixel_shuffle/unshuffle, channel_shuffle, interpolate/upsample,
grid_sample, affine_grid.

Interpolation is separable: nearest modes gather with ``index_select`` per
dimension; linear/bilinear/trilinear/bicubic apply one small (out, in) weight
matrix per dimension with matmul, so gradients come from matmul's own.
grid_sample is a composite of gathers and arithmetic, differentiable in both the
input and the grid.
"""
import math
import warnings

import numpy as np

from ..._core import dtype as _dt
from ..._core.layout import contiguous_format, suggest_memory_format
from ..._core.dispatch import overridable
from ..._core.tensor import host_tensor, wrap
from ...ops._helpers import not_implemented
from ...ops.creation import linspace
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, \
    apply_separable

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample",
           "affine_grid"]


@overridable
def pixel_shuffle(input, upscale_factor):
    """Rearrange (*, C*r^2, H, W) into (*, C, H*r, W*r)."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, C, H, W = input.shape
    if C % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={C} "
                           f"is not divisible by {r * r}")
    lead = tuple(lead)
    k = len(lead)
    x = input.reshape(lead + (C // (r * r), r, r, H, W))
    perm = tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2)
    return x.permute(perm).reshape(lead + (C // (r * r), H * r, W * r))


@overridable
def pixel_unshuffle(input, downscale_factor):
    """Rearrange (*, C, H*r, W*r) into (*, C*r^2, H, W)."""
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, C, H, W = input.shape
    if H % r or W % r:
        which, v = ("height", H) if H % r else ("width", W)
        raise RuntimeError(f"pixel_unshuffle expects {which} to be divisible by "
                           f"downscale_factor, but input.size({-2 if which == 'height' else -1})"
                           f"={v} is not divisible by {r}")
    lead = tuple(lead)
    k = len(lead)
    x = input.reshape(lead + (C, H // r, r, W // r, r))
    perm = tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3)
    return x.permute(perm).reshape(lead + (C * r * r, H // r, W // r))


@overridable
def channel_shuffle(input, groups):
    """Divide the channels into ``groups`` and interleave them."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    N, C = input.shape[:2]
    if C % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {C} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((N, groups, C // groups) + rest).transpose(1, 2).reshape(input.shape)


native_channel_shuffle = channel_shuffle


# ---- interpolate -------------------------------------------------------------------------

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}


def _scale(in_size, out_size, align_corners, scale):
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale is not None and scale > 0:
        return 1.0 / scale
    return in_size / out_size


def _nearest_index(in_size, out_size, scale, exact):
    s = np.float32(1.0 / scale if scale is not None and scale > 0 else in_size / out_size)
    dst = np.arange(out_size, dtype=np.float32)
    src = np.floor((dst + np.float32(0.5)) * s if exact else dst * s).astype(np.int64)
    return np.minimum(src, in_size - 1)


def _cubic_weights(t, A=-0.75):
    """The four cubic-convolution weights (A = -0.75, torch's) of taps -1..2 at fraction t."""
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _interp_matrix(in_size, out_size, mode, align_corners, scale):
    s = _scale(in_size, out_size, align_corners, scale)
    dst = np.arange(out_size, dtype=np.float64)
    src = dst * s if align_corners else s * (dst + 0.5) - 0.5
    m = np.zeros((out_size, in_size))
    rows = np.arange(out_size)
    if mode == "bicubic":
        i0 = np.floor(src).astype(np.int64)
        ws = _cubic_weights(src - i0)
        for k, w in zip(range(-1, 3), ws):
            np.add.at(m, (rows, np.clip(i0 + k, 0, in_size - 1)), w)
        return m
    if not align_corners:
        src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    lam = src - i0
    np.add.at(m, (rows, i0), 1.0 - lam)
    np.add.at(m, (rows, i1), lam)
    return m


def _aa_filter(mode, a=-0.5):
    """The resampling filter: the triangle, or the cubic of coefficient ``a`` (antialiased
    bicubic uses PIL's Keys kernel, -0.5; plain uint8 bicubic torch's -0.75)."""
    if mode == "bilinear":
        return lambda x: np.maximum(1.0 - np.abs(x), 0.0)

    def cubic(x):
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))
    return cubic


def _aa_matrix(in_size, out_size, mode, align_corners, scale, antialias=True):
    """torch's resampling weights of its antialiased (and uint8) kernels: when downsampling
    with antialias, the filter is stretched by the scale so every input sample contributes;
    each row normalised to sum 1."""
    s = _scale(in_size, out_size, align_corners, scale)
    stretch = s if s >= 1.0 and antialias else 1.0
    support = (2.0 if mode == "bilinear" else 4.0) * 0.5 * stretch
    delta = 0.5 if align_corners and not antialias else 0.0  # torch's uint8 align_corners
    m = np.zeros((out_size, in_size))
    for i in range(out_size):
        center = s * (i + 0.5 - delta)
        lo = max(int(center - support + 0.5 + delta), 0)  # C casts truncate toward zero
        hi = min(int(center + support + 0.5 + delta), in_size)
        if hi <= lo:
            continue
        w = _aa_filter(mode)((np.arange(lo, hi) - center + 0.5 - delta) / stretch)
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0 else w
    return m


def _cubic_uint8_matrix(in_size, out_size, align_corners, scale):
    """torch's weights of plain (non-antialiased) bicubic on uint8: the four taps of the -0.75
    cubic around the source index (its fraction clamped to [0, 1]), taps beyond an edge added
    into the edge's weight, unnormalised; with the largest value any weight takes while the
    edge taps are added up (torch sizes its fixed point by that running maximum)."""
    s = _scale(in_size, out_size, align_corners, scale)
    cubic = _aa_filter("bicubic", -0.75)
    m = np.zeros((out_size, in_size))
    peak = 0.0
    for i in range(out_size):
        real = s * i if align_corners else s * (i + 0.5) - 0.5
        idx = min(int(np.floor(np.float32(real))), in_size - 1)  # torch floors in float32
        lam = min(max(real - idx, 0.0), 1.0)
        lo = max(idx - 1, 0)
        n = min(max(min(idx + 3, in_size) - lo, 0), 4)
        taps = cubic(np.arange(-1, 3) - lam)
        row = np.zeros(4)
        k = 0
        for j in range(4):
            if idx - 1 + j <= 0:
                k = 0
            elif idx - 1 + j >= in_size - 1:
                k = n - 1
            row[k] += taps[j]
            peak = max(peak, row[k])
            k += 1
        m[i, lo:lo + n] = row[:n]
    return m, peak


def _resample_uint8(x, osz, scales, mode, align_corners, antialias):
    """torch's uint8 resampling: weights in int16 fixed point (the largest precision that
    keeps the biggest weight below 2**15, rounded half away from zero), one pass per
    resized dimension (width first), each rounded and clamped to uint8."""
    a = np.asarray(x._data)
    for d in (1, 0):
        L, o = a.shape[2 + d], osz[d]
        if L == o:
            continue
        if mode == "bicubic" and not antialias:
            m, peak = _cubic_uint8_matrix(L, o, align_corners, scales[d])
        else:
            m = _aa_matrix(L, o, mode, align_corners, scales[d], antialias)
            peak = m.max()
        bits = next((p for p in range(22) if int(0.5 + peak * (1 << (p + 1))) >= 1 << 15), 22)
        q = np.trunc(m * (1 << bits) + np.where(m < 0, -0.5, 0.5)).astype(np.int64)
        acc = np.moveaxis(a, 2 + d, -1).astype(np.int64) @ q.T
        r = np.clip((acc + (1 << (bits - 1))) >> bits, 0, 255).astype(np.uint8)
        a = np.moveaxis(r, -1, 2 + d)
    return host_tensor(np.ascontiguousarray(a), x)


def _output_size(input, n, size, scale_factor, recompute):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    spatial = tuple(input.shape[2:])
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != n:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(spatial)} and output size of {size}. Please provide "
                                 f"input tensor in (N, C, d1, d2, ...,dK) format and output size "
                                 f"in (o1, o2, ...,oK) format.")
            osz = tuple(int(s) for s in size)
        else:
            osz = (int(size),) * n
        return osz, (None,) * n
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != n:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(spatial)} and scale_factor of shape {scale_factor}. Please "
                             f"provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             f"scale_factor in (s1, s2, ...,sK) format.")
        sf = tuple(float(s) for s in scale_factor)
    else:
        sf = (float(scale_factor),) * n
    osz = tuple(int(math.floor(float(s) * f)) for s, f in zip(spatial, sf))
    return osz, ((None,) * n if recompute else sf)


def _interp_dtype_check(input, mode, n, antialias):
    """torch's interpolation kernels take floating inputs (antialiased: float32/64 only), and
    uint8 images except in (tri)linear mode; the name in the error is the kernel's."""
    dt = input.dtype
    if antialias and dt in (_dt.float32, _dt.float64):
        return
    if antialias and dt != _dt.uint8:
        not_implemented("compute_index_ranges_weights", dt)
    if (dt.is_floating_point and not antialias) or (dt == _dt.uint8 and mode in (
            "nearest", "nearest-exact")):
        return
    if dt == _dt.uint8 and mode in ("bilinear", "bicubic"):
        return  # torch's fixed-point kernel (_resample_uint8)
    if mode in ("nearest", "nearest-exact"):
        name = "upsample_nearest2d_channels_last" if n == 2 else "compute_indices_weights_nearest"
    else:
        name = {"bilinear": "upsample_bilinear2d_channels_last",
                "bicubic": "compute_indices_weights_cubic"}.get(
                    mode, "compute_indices_weights_linear")
    not_implemented(name, dt)


@overridable
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Down/up samples the input to the given size or scale_factor, with the given mode."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif mode in _LINEAR_MODES:
        if align_corners is None:
            align_corners = False
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | area | nearest-exact (got {mode})")
    if antialias and not (mode in ("bilinear", "bicubic") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    n = input.dim() - 2
    if n not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | area | nearest-exact (got {mode})")
    need = _LINEAR_MODES.get(mode)
    if need is not None and need != n:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{need + 2}D input")
    osz, scales = _output_size(input, n, size, scale_factor, recompute_scale_factor)
    if any(o <= 0 for o in osz):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({'x'.join(map(str, input.shape[2:]))}) and output "
                           f"({'x'.join(map(str, osz))})")
    if mode == "area":
        out = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[n - 1](input, osz)
        # torch's adaptive_avg_pool3d returns the contiguous format
        return out if n == 3 else _in_memory_format_of(input, out)
    return _in_memory_format_of(input, _resample(input, osz, scales, mode, n, align_corners,
                                                 antialias))


def _resample(input, osz, scales, mode, n, align_corners, antialias):
    _interp_dtype_check(input, mode, n, antialias)
    spatial = tuple(input.shape[2:])
    x = input
    if mode in ("nearest", "nearest-exact"):
        for i, (L, o, s) in enumerate(zip(spatial, osz, scales)):
            idx = _nearest_index(L, o, s, mode == "nearest-exact")
            if o != L or (idx != np.arange(L)).any():
                x = x.index_select(2 + i, wrap(idx))
        return x if x is not input else input.clone()
    if input.dtype == _dt.uint8:  # bilinear or bicubic: torch's fixed point
        return _resample_uint8(input, osz, scales, mode, align_corners, antialias)
    dt = input.dtype.np
    weights = _aa_matrix if antialias else _interp_matrix
    mats = [wrap(weights(L, o, mode, align_corners, s).astype(dt))
            for L, o, s in zip(spatial, osz, scales)]
    return apply_separable(x, mats)


def _in_memory_format_of(input, out):
    """``out`` laid out channels-last when ``input`` is (torch's resampling kernels keep
    their input's suggested memory format), values unchanged."""
    if input.dim() < 4 or suggest_memory_format(input.shape, input.stride()) is \
            contiguous_format:
        return out
    last = (0,) + tuple(range(2, out.dim())) + (1,)   # N, spatial..., C
    back = (0, out.dim() - 1) + tuple(range(1, out.dim() - 1))
    return out.permute(last).contiguous().permute(back)


@overridable
def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Upsample input (deprecated: use interpolate)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=3)
    return interpolate(input, size, scale_factor, mode, align_corners)


@overridable
def upsample_nearest(input, size=None, scale_factor=None):
    """Upsample input using nearest neighbours' pixel values (deprecated)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=3)
    return interpolate(input, size, scale_factor, mode="nearest")


@overridable
def upsample_bilinear(input, size=None, scale_factor=None):
    """Upsample input using bilinear upsampling with align_corners=True (deprecated)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=3)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- grid_sample / affine_grid -----------------------------------------------------------

def _unnormalize(c, size, align_corners):
    if align_corners:
        return (c + 1) * ((size - 1) / 2)
    return ((c + 1) * size - 1) / 2


def _reflect(c, lo2, hi2):
    if lo2 == hi2:
        return c * 0
    mn = lo2 / 2
    span = (hi2 - lo2) / 2
    c = (c - mn).abs()
    extra = c.fmod(span)
    even = (c.detach() / span).floor().remainder(2) == 0
    return (extra + mn).where(even, span - extra + mn)


def _pad_coord(c, size, padding_mode, align_corners):
    if padding_mode == "border":
        return c.clamp(0, size - 1)
    if padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        return c.clamp(0, size - 1)
    return c


@overridable
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Compute grid sample: output values sampled from ``input`` at ``grid`` locations.

    4-D input (N, C, H, W) with grid (N, Ho, Wo, 2), or 5-D input (N, C, D, H, W) with grid
    (N, Do, Ho, Wo, 3); ``grid[..., 0]`` is the x (last spatial) coordinate in [-1, 1]."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                      "old behavior is desired. See the documentation of grid_sample for details.",
                      stacklevel=3)
        align_corners = False
    nd = input.dim() - 2
    if input.dim() not in (4, 5) or grid.dim() != input.dim() or grid.shape[-1] != nd or \
            grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, size {nd} in the grid's last dimension and the same "
                           f"batch size, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    N, C = input.shape[:2]
    spatial = tuple(input.shape[2:])              # (H, W) or (D, H, W)
    out_sp = tuple(grid.shape[1:-1])
    # coordinate of spatial dim d comes from grid[..., nd - 1 - d] (x is the last dim)
    raw = [_unnormalize(grid[..., nd - 1 - d], spatial[d], align_corners) for d in range(nd)]
    flat = input.reshape(N, C, -1)
    strides = [int(np.prod(spatial[d + 1:], dtype=np.int64)) for d in range(nd)]
    n_out = int(np.prod(out_sp, dtype=np.int64))

    def tap(idx):
        """input[n, :, *idx] for integer coordinate tensors, zero outside the input."""
        valid, pos = None, None
        for d, i in enumerate(idx):
            ok = (i >= 0) & (i < spatial[d])
            valid = ok if valid is None else valid & ok
            term = i.clamp(0, spatial[d] - 1) * strides[d]
            pos = term if pos is None else pos + term
        v = flat.gather(2, pos.reshape(N, 1, n_out).expand(N, C, n_out)).reshape(
            (N, C) + out_sp)
        return v * valid.unsqueeze(1).to(input.dtype)

    if mode == "bicubic":
        # torch's bicubic: weights from the unpadded coordinate, padding applied per tap
        x, y = raw[1], raw[0]
        x0, y0 = x.detach().floor(), y.detach().floor()
        wx, wy = _cubic_weights(x - x0), _cubic_weights(y - y0)
        out = None
        for i in range(4):
            yi = _pad_coord(y0 + (i - 1), spatial[0], padding_mode, align_corners)
            row = None
            for j in range(4):
                xj = _pad_coord(x0 + (j - 1), spatial[1], padding_mode, align_corners)
                v = tap((yi.long(), xj.long())) * wx[j].unsqueeze(1)
                row = v if row is None else row + v
            out = row * wy[i].unsqueeze(1) if out is None else out + row * wy[i].unsqueeze(1)
        return out
    coords = [_pad_coord(c, spatial[d], padding_mode, align_corners) for d, c in enumerate(raw)]
    if mode == "nearest":
        out = tap([c.detach().round().long() for c in coords])
        if grid.requires_grad:
            # the grid gets a (zero) gradient, as in PyTorch
            out = out + (sum(coords) * 0).unsqueeze(1)
        return out
    lows = [c.detach().floor() for c in coords]
    w1 = [(c - lo).unsqueeze(1) for c, lo in zip(coords, lows)]
    lows = [lo.long() for lo in lows]
    out = None
    for corner in range(1 << nd):
        bits = [(corner >> (nd - 1 - d)) & 1 for d in range(nd)]
        w = None
        for d, b in enumerate(bits):
            f = w1[d] if b else 1 - w1[d]
            w = f if w is None else w * f
        v = tap([lo + b for lo, b in zip(lows, bits)]) * w
        out = v if out is None else out + v
    return out


def _base_coords(n, align_corners, dtype):
    # torch's: linspace(-1, 1, n) in theta's dtype, then * (n - 1) / n in that dtype (the
    # bits matter: at identity the sample points sit on pixel centres, where bilinear
    # sampling's gradient jumps, so a last-bit difference changes theta's gradient)
    if n <= 1:
        return np.zeros(max(n, 0), dtype.np)
    c = linspace(-1, 1, n, dtype=dtype).numpy()
    return c if align_corners else c * (n - 1) / n


@overridable
def affine_grid(theta, size, align_corners=None):
    """Generate a 2D or 3D flow field (sampling grid), given a batch of affine matrices."""
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                      "old behavior is desired. See the documentation of grid_sample for details.",
                      stacklevel=3)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    dt = theta.dtype
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {tuple(theta.shape)}.")
        N, _, H, W = size
        xs, ys = _base_coords(W, align_corners, dt), _base_coords(H, align_corners, dt)
        base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None],
                                            np.ones((H, W), dt.np)), -1)
        shape = (N, H, W, 2)
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {tuple(theta.shape)}.")
        N, _, D, H, W = size
        xs, ys, zs = (_base_coords(W, align_corners, dt), _base_coords(H, align_corners, dt),
                      _base_coords(D, align_corners, dt))
        base = np.stack(np.broadcast_arrays(xs[None, None, :], ys[None, :, None],
                                            zs[:, None, None], np.ones((D, H, W), dt.np)), -1)
        shape = (N, D, H, W, 3)
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != N:
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                         f"{size}. Got {tuple(theta.shape)}.")
    # base (H*W, d+1) times theta^T, summed left to right as torch's batched GEMM does for
    # this depth (x*t0 + y*t1 [+ z*t2]) + t_d: bit for bit torch's grid
    b = base.reshape(-1, base.shape[-1])
    tt = theta.transpose(1, 2)                       # (N, d+1, k)
    out = None
    for j in range(b.shape[1] - 1):
        term = wrap(np.ascontiguousarray(b[:, j:j + 1])) * tt[:, j:j + 1, :]
        out = term if out is None else out + term
    return (out + tt[:, -1:, :]).reshape(shape)
