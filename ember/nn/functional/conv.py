"""Convolutions, padding and unfold/fold: argument checks and the composites over the
primitives of ``ember.ops.nn.conv`` (im2col + one BLAS matmul per call, groups batched;
the adjoint col2im for transposed convolution and fold; ``pad``).
"""
from ..._core.dispatch import overridable
from ...ops._helpers import apply, type_name
from ...ops.blas import matmul
from ...ops.nn.conv import PAD, _prod, col2im, from_cbl, im2col

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


# ---- convolution -------------------------------------------------------------------------

def _check_input(input, n, name):
    d = input.dim()
    if d not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)}")
    return d == n + 1


def _check_dtypes(input, weight, bias):
    dt = input.dtype
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"slow_conv2d_cpu\" not implemented for '{type_name(dt)}'")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != dt:
            raise RuntimeError(f"Input type ({type_name(dt)}) and {name} type "
                               f"({type_name(t.dtype)}) should be the same")


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
    out = from_cbl(y, bias, (B, O) + lo)
    return out.squeeze(0) if unbatched else out


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


