"""Convolutions, padding and unfold/fold.

Convolution is im2col + one BLAS matmul per call (groups batched).  Three
primitives carry it: ``im2col`` (sliding windows copied into a (C, *k, B, *L)
column buffer), its adjoint ``col2im`` (windows summed back), and ``_from_cbl``
(matmul result (C, B*L) back to (B, C, *L) plus bias, contiguous).  Each vjp is
the adjoint primitive, so conv gradients are themselves convolutions in ember
ops (transposed conv for the input, correlation for the weight) and double
backward works.  ``pad`` is a primitive too; its vjp folds the padded border back
(``_pad_backward``), whose vjp is ``pad`` again.
"""
import itertools

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..._core.dispatch import overridable
from ...ops._helpers import _F32, _HALF, Op, apply, type_name
from ...ops.blas import matmul

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "pad", "unfold", "fold"]


def ntuple(v, n, name="argument"):
    if isinstance(v, (list, tuple)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _compute(x):
    """(array in its compute dtype, dtype to cast the result to or None)."""
    if x.dtype in _HALF:
        return x.astype(_F32), x.dtype
    return x, None


# ---- im2col / col2im -------------------------------------------------------------------

def _windows(xp, x, ks, dilation, pad, stride):
    """Sliding windows over the last len(ks) dims of ``x`` as a view (..., *Lo, *k)."""
    n = len(ks)
    lead = x.ndim - n
    if any(p for pr in pad for p in pr):
        x = xp.pad(x, ((0, 0),) * lead + tuple(pad))
    eff = tuple(d * (k - 1) + 1 for k, d in zip(ks, dilation))
    win = sliding_window_view(x, eff, axis=tuple(range(lead, lead + n)))
    return win[(slice(None),) * lead + tuple(slice(None, None, s) for s in stride) +
               tuple(slice(None, None, d) for d in dilation)]


def _im2col_kernel(xp, x, ks, dilation, pad, stride):
    n = len(ks)
    win = _windows(xp, x, ks, dilation, pad, stride)
    perm = (1,) + tuple(range(2 + n, 2 + 2 * n)) + (0,) + tuple(range(2, 2 + n))
    return xp.ascontiguousarray(win.transpose(perm))


def _col2im_kernel(xp, cols, in_spatial, ks, dilation, pad, stride):
    n = len(ks)
    a, back = _compute(cols)
    C, B, lo = a.shape[0], a.shape[1 + n], a.shape[2 + n:]
    full = tuple(L + p0 + p1 for L, (p0, p1) in zip(in_spatial, pad))
    out = xp.zeros((B, C) + full, dtype=a.dtype)
    for idx in itertools.product(*[range(k) for k in ks]):
        sl = tuple(slice(i * d, i * d + s * (m - 1) + 1, s)
                   for i, d, s, m in zip(idx, dilation, stride, lo))
        out[(slice(None), slice(None)) + sl] += a[(slice(None),) + idx].swapaxes(0, 1)
    if any(p for pr in pad for p in pr):
        out = xp.ascontiguousarray(out[(slice(None), slice(None)) + tuple(
            slice(p0, p0 + L) for L, (p0, _) in zip(in_spatial, pad))])
    return out if back is None else out.astype(back)


def _im2col_vjp(ctx, g, x, ks, dilation, pad, stride):
    return col2im(g, ctx.in_meta[0][0][2:], ks, dilation, pad, stride)


def _col2im_vjp(ctx, g, cols, in_spatial, ks, dilation, pad, stride):
    return im2col(g, ks, dilation, pad, stride)


def _im2col_shape(x, ks, dilation, pad, stride):
    n = len(ks)
    lead, spatial = x.shape[:-n], x.shape[-n:]
    lo = tuple((L + p0 + p1 - d * (k - 1) - 1) // s + 1
               for L, (p0, p1), k, d, s in zip(spatial, pad, ks, dilation, stride))
    return lead[1:] + tuple(ks) + lead[:1] + lo, x.dtype


def _col2im_shape(cols, in_spatial, ks, dilation, pad, stride):
    n = len(ks)
    return (cols.shape[1 + n], cols.shape[0]) + tuple(in_spatial), cols.dtype


IM2COL = Op("im2col", _im2col_kernel, _im2col_vjp, save_inputs=False, category="nn",
            shape=_im2col_shape)
COL2IM = Op("col2im", _col2im_kernel, _col2im_vjp, save_inputs=False, category="nn",
            shape=_col2im_shape)


def im2col(x, ks, dilation, pad, stride):
    """Windows of ``x`` (B, C, *L) as columns (C, *ks, B, *Lo); ``pad`` is ((lo, hi), ...)."""
    return apply(IM2COL, (x,), {"ks": ks, "dilation": dilation, "pad": pad, "stride": stride})


def col2im(cols, in_spatial, ks, dilation, pad, stride):
    """Adjoint of `im2col`: columns (C, *ks, B, *Lo) summed back into (B, C, *in_spatial)."""
    return apply(COL2IM, (cols,), {"in_spatial": tuple(in_spatial), "ks": ks,
                                   "dilation": dilation, "pad": pad, "stride": stride})


# ---- (C, B*L) <-> (B, C, *L) with bias ---------------------------------------------------

def _from_cbl_kernel(xp, y, bias, shape):
    B, C = shape[:2]
    a = y.reshape(C, B, _prod(shape[2:]))  # explicit: -1 is ambiguous for an empty batch
    out = xp.empty(shape, dtype=y.dtype)
    o3 = out.reshape(B, C, a.shape[2])
    if bias is None:
        o3[...] = a.transpose(1, 0, 2)
    else:
        xp.add(a.transpose(1, 0, 2), bias.astype(y.dtype, copy=False)[:, None], out=o3)
    return out


def _from_cbl_vjp(ctx, g, y, bias, shape):
    ny, nb = ctx.needs_input_grad
    gy = gb = None
    if ny:
        gy = g.reshape(shape[0], shape[1], _prod(shape[2:])).transpose(0, 1).reshape(ctx.in_meta[0][0])
    if nb:
        gb = g.sum((0,) + tuple(range(2, len(shape))))
    return gy, gb


FROM_CBL = Op("_from_cbl", _from_cbl_kernel, _from_cbl_vjp, save_inputs=False, category="nn",
              shape=lambda y, b, shape: (shape, y.dtype))


# ---- convolution -------------------------------------------------------------------------

def _check_input(input, n, name):
    d = input.dim()
    if d not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    return d == n + 1


def _check_dtypes(input, weight, bias):
    dt = input._data.dtype
    if dt.kind not in "fV":
        raise NotImplementedError(f"\"slow_conv2d_cpu\" not implemented for '{type_name(dt)}'")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._data.dtype != dt:
            raise RuntimeError(f"Input type ({type_name(dt)}) and {name} type "
                               f"({type_name(t._data.dtype)}) should be the same")


def _shape_str(s):
    return " x ".join(str(v) for v in s)


def _same_pad(ks, dilation):
    out = []
    for k, d in zip(ks, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return tuple(out)


def _check_geometry(stride, dilation, padding):
    if any(v <= 0 for v in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if not isinstance(padding, str) and any(
            v < 0 for v in (padding if isinstance(padding, (tuple, list)) else (padding,))):
        raise RuntimeError("negative padding is not supported")


def _conv(input, weight, bias, stride, padding, dilation, groups, n, name):
    unbatched = _check_input(input, n, name)
    if unbatched:
        input = input.unsqueeze(0)
    _check_dtypes(input, weight, bias)
    stride = ntuple(stride, n, "stride")
    dilation = ntuple(dilation, n, "dilation")
    _check_geometry(stride, dilation, padding)
    ks = tuple(weight.shape[2:])
    if weight.dim() != n + 2:
        raise RuntimeError(f"Expected {n + 2}-dimensional input for {n + 2}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size "
                           f"{list(input.shape)} instead")
    if isinstance(padding, str):
        if padding == "valid":
            pad = ((0, 0),) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad = _same_pad(ks, dilation)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pad = tuple((p, p) for p in ntuple(padding, n, "padding"))
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    B, C = input.shape[:2]
    O = weight.shape[0]
    if O == 0:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if O % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    if weight.shape[1] * groups != C:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {weight.shape[1] * groups} channels, "
                           f"but got {C} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != O):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {O} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    padded = tuple(L + p0 + p1 for L, (p0, p1) in zip(input.shape[2:], pad))
    eff = tuple(d * (k - 1) + 1 for k, d in zip(ks, dilation))
    if any(e > p for e, p in zip(eff, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_shape_str(padded)}). "
                           f"Kernel size: ({_shape_str(eff)}). Kernel size can't be greater than "
                           f"actual input size")
    lo = tuple((p - e) // s + 1 for p, e, s in zip(padded, eff, stride))
    cols = im2col(input, ks, dilation, pad, stride)          # (C, *ks, B, *lo)
    # sizes spelled out: a -1 cannot be inferred when the batch or a channel count is 0
    K, N = (C // groups) * _prod(ks), B * _prod(lo)
    if groups == 1:
        y = matmul(weight.reshape(O, K), cols.reshape(K, N))
    else:
        y = matmul(weight.reshape(groups, O // groups, K), cols.reshape(groups, K, N))
    out = apply(FROM_CBL, (y, bias), {"shape": (B, O) + lo})
    return out.squeeze(0) if unbatched else out


def _prod(s):
    r = 1
    for v in s:
        r *= v
    return r


@overridable
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Applies a 1D convolution over an input signal composed of several input planes."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@overridable
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Applies a 2D convolution over an input image composed of several input planes."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@overridable
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Applies a 3D convolution over an input image composed of several input planes."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n,
                    name):
    unbatched = _check_input(input, n, name)
    if unbatched:
        input = input.unsqueeze(0)
    _check_dtypes(input, weight, bias)
    stride = ntuple(stride, n, "stride")
    dilation = ntuple(dilation, n, "dilation")
    padding = ntuple(padding, n, "padding")
    output_padding = ntuple(output_padding, n, "output_padding")
    _check_geometry(stride, dilation, padding)
    if any(v < 0 for v in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    B, Cin = input.shape[:2]
    if weight.shape[0] != Cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {weight.shape[0]} channels, but got "
                           f"{Cin} channels instead")
    if Cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, "
                               f"but got output_padding_height: {op}, stride: {s}, dilation: {d}")
    ks = tuple(weight.shape[2:])
    cout_g = weight.shape[1]
    Cout = cout_g * groups
    L = tuple(input.shape[2:])
    out_sp = tuple((l - 1) * s - 2 * p + d * (k - 1) + op + 1 for l, s, p, d, k, op in
                   zip(L, stride, padding, dilation, ks, output_padding))
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Given input size per channel: ({_shape_str(L)}). Calculated output "
                           f"size per channel: ({_shape_str(out_sp)}). Output size is too small")
    K = _prod(ks)
    xm = input.transpose(0, 1).reshape(groups, Cin // groups, -1)
    wm = weight.reshape(groups, Cin // groups, cout_g * K).transpose(1, 2)
    cols = matmul(wm, xm).reshape((Cout,) + ks + (B,) + L)
    out = col2im(cols, out_sp, ks, dilation, tuple((p, p) for p in padding), stride)
    if bias is not None:
        out = out + bias.reshape((Cout,) + (1,) * n)
    return out.squeeze(0) if unbatched else out


@overridable
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Applies a 1D transposed convolution operator over an input signal."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


@overridable
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Applies a 2D transposed convolution operator over an input image."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


@overridable
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Applies a 3D transposed convolution operator over an input image."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")


# ---- unfold / fold -----------------------------------------------------------------------

def _block_params(kernel_size, dilation, padding, stride):
    """unfold/fold's four geometry arguments as 2-tuples (torch's argument checks)."""
    return (ntuple(kernel_size, 2, "kernel_size"), ntuple(dilation, 2, "dilation"),
            ntuple(padding, 2, "padding"), ntuple(stride, 2, "stride"))


@overridable
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks from a batched input tensor."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    unbatched = input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
    ks, dil, pd, st = _block_params(kernel_size, dilation, padding, stride)
    B, C = input.shape[:2]
    cols = im2col(input, ks, dil, tuple((p, p) for p in pd), st)
    out = cols.reshape(C * ks[0] * ks[1], B, -1).transpose(0, 1)
    return out[0] if unbatched else out


@overridable
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine an array of sliding local blocks into a large containing tensor."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are "
                           f"supported (got {input.dim()}D)")
    unbatched = input.dim() == 2
    if unbatched:
        input = input.unsqueeze(0)
    osz = ntuple(output_size, 2, "output_size")
    ks, dil, pd, st = _block_params(kernel_size, dilation, padding, stride)
    B, CK, L = input.shape
    K = ks[0] * ks[1]
    if CK % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={CK} and "
                           f"kernel_size={ks}")
    lo = tuple((o + 2 * p - (d * (k - 1) + 1)) // s + 1
               for o, p, d, k, s in zip(osz, pd, dil, ks, st))
    if lo[0] * lo[1] != L:
        raise RuntimeError(f"Given output_size={osz}, kernel_size={ks}, dilation={dil}, "
                           f"padding={pd}, stride={st}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {lo[0]} * {lo[1]} = "
                           f"{lo[0] * lo[1]}, but got input.size(2)={L}.")
    cols = input.transpose(0, 1).reshape((CK // K,) + ks + (B,) + lo)
    out = col2im(cols, osz, ks, dil, tuple((p, p) for p in pd), st)
    return out[0] if unbatched else out


# ---- pad ---------------------------------------------------------------------------------

def _source_index(n, lo, hi, mode):
    """For each output position along a dim of size n padded by (lo, hi): its source index
    (-1 where a constant fills it)."""
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


_NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
            "circular": "wrap"}


def _pad_kernel(xp, x, pads, mode, value=0.0):
    """``pads``: ((dim, lo, hi), ...) for the padded dims."""
    if all(lo >= 0 and hi >= 0 for _, lo, hi in pads):
        width = [(0, 0)] * x.ndim
        for d, lo, hi in pads:
            width[d] = (lo, hi)
        if mode == "constant":
            return xp.pad(x, width, mode="constant", constant_values=value)
        return xp.pad(x, width, mode=_NP_MODE[mode])
    out = x
    for d, lo, hi in pads:
        src = _source_index(out.shape[d], lo, hi, mode)
        taken = xp.take(out, np.maximum(src, 0), axis=d)
        if mode == "constant" and (src < 0).any():
            shape = [1] * out.ndim
            shape[d] = len(src)
            taken = xp.where((src < 0).reshape(shape), xp.asarray(value, dtype=out.dtype), taken)
        out = taken
    return out


def _pad_backward_kernel(xp, g, in_shape, pads, mode):
    out = g
    for d, lo, hi in reversed(pads):
        n = in_shape[d]
        src = _source_index(n, lo, hi, mode)
        shape = list(out.shape)
        shape[d] = n
        acc = xp.zeros(shape, dtype=out.dtype)
        moved_acc = xp.moveaxis(acc, d, -1)
        moved_g = xp.moveaxis(out, d, -1)
        # interior positions map one to one; the few border positions are added one by one
        inner = np.nonzero((src == np.arange(len(src)) - lo) & (src >= 0))[0]
        if len(inner):
            a, b = inner[0], inner[-1] + 1
            moved_acc[..., a - lo:b - lo] += moved_g[..., a:b]
        else:
            a = b = 0
        for j in itertools.chain(range(0, a), range(b, len(src))):
            if src[j] >= 0:
                moved_acc[..., src[j]] += moved_g[..., j]
        out = acc
    return out


def _pad_vjp(ctx, g, x, pads, mode, value=0.0):
    return apply(PAD_BACKWARD, (g,), {"in_shape": ctx.in_meta[0][0], "pads": pads, "mode": mode})


def _pad_backward_vjp(ctx, g, gy, in_shape, pads, mode):
    return apply(PAD, (g,), {"pads": pads, "mode": mode})


def _pad_shape(x, pads, mode, value=0.0):
    s = list(x.shape)
    for d, lo, hi in pads:
        s[d] = s[d] + lo + hi
    return tuple(s), x.dtype


PAD = Op("pad", _pad_kernel, _pad_vjp, save_inputs=False, category="nn", shape=_pad_shape)
PAD_BACKWARD = Op("pad_backward", _pad_backward_kernel, _pad_backward_vjp, save_inputs=False,
                  category="nn", shape=lambda g, in_shape, pads, mode: (tuple(in_shape), g.dtype))


@overridable
def pad(input, pad, mode="constant", value=None):
    """Pads tensor: ``pad`` lists (left, right) sizes from the last dimension backwards."""
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = input.dim()
    if len(pad) // 2 > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length " f"{len(pad)} and input of "
                           f"dimension {nd}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    npad = len(pad) // 2
    pads = tuple((nd - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(npad))
    shape = tuple(input.shape)
    if mode != "constant":
        if not (npad + 1 <= nd <= npad + 2) or npad > 3:
            raise NotImplementedError(f"Only 2D, 3D, 4D, 5D padding with non-constant padding "
                                      f"are supported for now")
        for d, lo, hi in pads:
            n = shape[d]
            if mode == "reflect" and (lo >= n or hi >= n):
                raise RuntimeError(f"Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                                   f"at dimension {d} of input {list(shape)}")
            if mode == "circular" and (lo > n or hi > n):
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if mode == "replicate" and n == 0:
                raise RuntimeError(f"padding size is expected to be greater than 0, but got: 0")
    for d, lo, hi in pads:
        if shape[d] + lo + hi < 0:
            raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
    params = {"pads": pads, "mode": mode}
    if mode == "constant" and value:
        params["value"] = value
    return apply(PAD, (input,), params)


