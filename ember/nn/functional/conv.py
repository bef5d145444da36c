"""Convolutions, padding and unfold/fold.  Each convolution is one operator of
``ember.ops.nn.conv_nd`` (``conv2d``, ...; their rules are ``convolution``'s); unfold and
fold are im2col and its adjoint col2im, and ``pad`` the padding primitive
(``ember.ops.nn.conv``).
"""
from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ...ops._helpers import apply, dtype_kind, not_implemented
from ...ops.nn.conv import PAD, col2im, im2col
from ...ops.nn.conv_checks import ntuple
from ...ops.nn.conv_nd import CONV_OPS

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "pad", "unfold", "fold"]


# ---- convolution: the ops of ember.ops.nn.conv_nd ---------------------------------------------

def _conv_call(name, input, weight, bias, n, stride, padding, dilation, groups,
               output_padding=None):
    # geometry as tuples: hashable op params, and torch's message for a wrong length here
    params = {"stride": ntuple(stride, n, "stride"),
              "padding": padding if isinstance(padding, str) else ntuple(padding, n, "padding"),
              "dilation": ntuple(dilation, n, "dilation"), "groups": groups}
    if output_padding is not None:
        params["output_padding"] = ntuple(output_padding, n, "output_padding")
    return apply(CONV_OPS[name], (input, weight, bias), params)


@overridable
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Applies a 1D convolution over an input signal composed of several input planes."""
    return _conv_call("conv1d", input, weight, bias, 1, stride, padding, dilation, groups)


@overridable
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Applies a 2D convolution over an input image composed of several input planes."""
    return _conv_call("conv2d", input, weight, bias, 2, stride, padding, dilation, groups)


@overridable
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Applies a 3D convolution over an input image composed of several input planes."""
    return _conv_call("conv3d", input, weight, bias, 3, stride, padding, dilation, groups)


@overridable
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Applies a 1D transposed convolution operator over an input signal."""
    return _conv_call("conv_transpose1d", input, weight, bias, 1, stride, padding, dilation,
                      groups, output_padding)


@overridable
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Applies a 2D transposed convolution operator over an input image."""
    return _conv_call("conv_transpose2d", input, weight, bias, 2, stride, padding, dilation,
                      groups, output_padding)


@overridable
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Applies a 3D transposed convolution operator over an input image."""
    return _conv_call("conv_transpose3d", input, weight, bias, 3, stride, padding, dilation,
                      groups, output_padding)


# ---- unfold / fold -----------------------------------------------------------------------

_BLOCK_CHECKS = {
    "kernel": ("kernel size should be greater than zero", "kernel", 1),
    "dilation": ("dilation should be greater than zero", "dilation", 1),
    "padding": ("padding should be non-negative", "pad", 0),
    "stride": ("stride should be greater than zero", "stride", 1),
}


def _block_params(kernel_size, dilation, padding, stride, order):
    """unfold/fold's four geometry arguments as 2-tuples, checked in torch's ``order``."""
    geo = {"kernel": ntuple(kernel_size, 2, "kernel_size"),
           "dilation": ntuple(dilation, 2, "dilation"), "padding": ntuple(padding, 2, "padding"),
           "stride": ntuple(stride, 2, "stride")}
    for key in order:
        what, short, low = _BLOCK_CHECKS[key]
        h, w = geo[key]
        if h < low or w < low:
            raise RuntimeError(f"{what}, but got {short}_height: {h} {short}_width: {w}")
    return geo["kernel"], geo["dilation"], geo["padding"], geo["stride"]


@overridable
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks from a batched input tensor."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    unbatched = input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
    ks, dil, pd, st = _block_params(kernel_size, dilation, padding, stride,
                                    ("kernel", "dilation", "padding", "stride"))
    lo = tuple((l + 2 * p - (d * (k - 1) + 1)) // s + 1
               for l, p, d, k, s in zip(input.shape[2:], pd, dil, ks, st))
    if lo[0] < 1 or lo[1] < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(input.shape[2:])}, "
                           f"kernel_size={ks}, dilation={dil}, padding={pd}, calculated shape of "
                           f"the array of sliding blocks as {lo}, but its components must be at "
                           f"least one.")
    if dtype_kind(input.dtype.np) == "i":  # torch's kernel has bool but no integer types
        not_implemented("im2col_out_cpu", input.dtype)
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
    ks, dil, pd, st = _block_params(kernel_size, dilation, padding, stride,
                                    ("kernel", "stride", "dilation", "padding"))
    B, CK, L = input.shape
    K = ks[0] * ks[1]
    if CK % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={CK} and "
                           f"kernel_size={ks}.")
    lo = tuple((o + 2 * p - (d * (k - 1) + 1)) // s + 1
               for o, p, d, k, s in zip(osz, pd, dil, ks, st))
    if lo[0] * lo[1] != L:
        raise RuntimeError(f"Given output_size={osz}, kernel_size={ks}, dilation={dil}, "
                           f"padding={pd}, stride={st}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {lo[0]} * {lo[1]} = "
                           f"{lo[0] * lo[1]}, but got input.size(2)={L}.")
    if dtype_kind(input.dtype.np) == "i":
        not_implemented("col2im_out_cpu", input.dtype)
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
        if mode in ("reflect", "replicate") and input.dtype == _dt.bool:
            not_implemented(f"{'reflection' if mode == 'reflect' else 'replication'}_pad{npad}d",
                            input.dtype)
    for d, lo, hi in pads:
        if shape[d] + lo + hi < 0:
            raise RuntimeError(f"The input size {shape[d]}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
    params = {"pads": pads, "mode": mode}
    if mode == "constant" and value:
        params["value"] = value
    return apply(PAD, (input,), params)


