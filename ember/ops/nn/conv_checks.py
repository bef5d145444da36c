"""Argument checks and geometry of convolution, on shapes alone (torch's messages).

The same functions serve the kernels (real shapes, NumPy dtypes) and the shape rules
(symbolic sizes, ember dtypes), so eager calls and traced ones reject the same inputs.  A
comparison a symbolic size cannot answer is taken as passing (the kernel checks again
when the program runs).
"""
import numpy as np

from ..._core import dtype as _dt
from .._helpers import type_name

__all__ = ["ntuple", "check_input_dim", "check_dtypes", "conv_pads", "check_conv",
           "transposed_out"]


def ntuple(v, n, name="argument"):
    """``v`` (an int or a sequence of 1 or n ints) as an n-tuple of ints."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _known(cond):
    """Whether ``cond`` is known to be true (a symbolic comparison may not say)."""
    return isinstance(cond, (bool, np.bool_)) and bool(cond)


def _shape_str(s):
    return " x ".join(str(v) for v in s)


def _ember_dtype(dt):
    return dt if isinstance(dt, _dt.dtype) else _dt.from_np(np.dtype(dt))


def check_input_dim(ndim, shape, n, name):
    """Raise unless the input is (n+1)-D (unbatched) or (n+2)-D; returns whether unbatched."""
    if ndim not in (n + 1, n + 2):
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(shape)}")
    return ndim == n + 1


def _kernel_name(n, transposed):
    """The CPU kernel torch names when it rejects a dtype."""
    if transposed:
        return f"slow_conv_transpose{max(n, 2)}d_out_cpu"
    return "compute_columns3d" if n == 3 else "slow_conv2d_cpu"


def check_dtypes(x_dt, w_dt, b_dt, n=2, transposed=False, dilation=()):
    """torch's CPU dtypes: floating and complex; integers for plain convolution (int64 only
    when dilated), int64 only for transposed; never bool."""
    dt = _ember_dtype(x_dt)
    ok = dt.is_floating_point or dt.is_complex or (
        dt != _dt.bool and (dt == _dt.int64 or not transposed))
    if not ok:
        raise NotImplementedError(f"\"{_kernel_name(n, transposed)}\" not implemented for "
                                  f"'{type_name(dt)}'")
    if not (dt.is_floating_point or dt.is_complex or dt == _dt.int64) and \
            any(d != 1 for d in dilation):
        raise NotImplementedError(f"\"slow_conv_dilated<>\" not implemented for "
                                  f"'{type_name(dt)}'")
    for name, other in (("weight", w_dt), ("bias", b_dt)):
        if other is not None and _ember_dtype(other) != dt:
            raise RuntimeError(f"Input type ({type_name(dt)}) and {name} type "
                               f"({type_name(_ember_dtype(other))}) should be the same")


def _check_geometry(stride, dilation, padding):
    if any(v <= 0 for v in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if not isinstance(padding, str) and any(v < 0 for v in padding):
        raise RuntimeError("negative padding is not supported")


def conv_pads(padding, ks, stride, dilation):
    """``padding`` (an n-tuple, 'valid' or 'same') as (lo, hi) pairs."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * len(ks)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for k, d in zip(ks, dilation))
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    return tuple((p, p) for p in padding)


def check_conv(x_shape, w_shape, b_shape, stride, padding, dilation, groups, transposed,
               output_padding):
    """torch's checks of a batched convolution's shapes; ``padding`` as (lo, hi) pairs.
    Returns the output shape."""
    n = len(x_shape) - 2
    if len(w_shape) != n + 2:
        raise RuntimeError(f"Expected {n + 2}-dimensional input for {n + 2}-dimensional weight "
                           f"{list(w_shape)}, but got {len(x_shape)}-dimensional input of size "
                           f"{list(x_shape)} instead")
    _check_geometry(stride, dilation, [p for pr in padding for p in pr])
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    B, C = x_shape[:2]
    ks = tuple(w_shape[2:])
    if transposed:
        return _check_transposed(x_shape, w_shape, b_shape, stride, padding, dilation, groups,
                                 output_padding)
    O = w_shape[0]
    if _known(O == 0):
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(w_shape)} instead")
    if _known(O % groups != 0):
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(w_shape)} instead")
    if _known(w_shape[1] * groups != C):
        raise RuntimeError(f"Given groups={groups}, weight of size {list(w_shape)}, expected "
                           f"input{list(x_shape)} to have {w_shape[1] * groups} channels, "
                           f"but got {C} channels instead")
    if b_shape is not None and (len(b_shape) != 1 or _known(b_shape[0] != O)):
        raise RuntimeError(f"Given weight of size {list(w_shape)}, expected bias to be "
                           f"1-dimensional with {O} elements, but got bias of size "
                           f"{list(b_shape)} instead")
    padded = tuple(L + p0 + p1 for L, (p0, p1) in zip(x_shape[2:], padding))
    eff = tuple(d * (k - 1) + 1 for k, d in zip(ks, dilation))
    if any(_known(e > p) for e, p in zip(eff, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_shape_str(padded)}). "
                           f"Kernel size: ({_shape_str(eff)}). Kernel size can't be greater than "
                           f"actual input size")
    lo = tuple((p - e) // s + 1 for p, e, s in zip(padded, eff, stride))
    return (B, O) + lo


def transposed_out(spatial, ks, stride, padding, dilation, output_padding):
    """Output sizes of a transposed convolution (``padding`` as (lo, hi) pairs)."""
    return tuple((L - 1) * s - p0 - p1 + d * (k - 1) + op + 1 for L, k, s, (p0, p1), d, op in
                 zip(spatial, ks, stride, padding, dilation, output_padding))


def _check_transposed(x_shape, w_shape, b_shape, stride, padding, dilation, groups,
                      output_padding):
    B, Cin = x_shape[:2]
    if any(v < 0 for v in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if _known(w_shape[0] != Cin):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w_shape)}, expected "
                           f"input{list(x_shape)} to have {w_shape[0]} channels, but got "
                           f"{Cin} channels instead")
    if _known(Cin % groups != 0):
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(w_shape)} instead")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, "
                               f"but got output_padding_height: {op}, stride: {s}, dilation: {d}")
    Cout = w_shape[1] * groups
    if b_shape is not None and (len(b_shape) != 1 or _known(b_shape[0] != Cout)):
        raise RuntimeError(f"Given transposed=1, weight of size {list(w_shape)}, expected bias "
                           f"to be 1-dimensional with {Cout} elements, but got bias of size "
                           f"{list(b_shape)} instead")
    L = tuple(x_shape[2:])
    out = transposed_out(L, tuple(w_shape[2:]), stride, padding, dilation, output_padding)
    if any(_known(o <= 0) for o in out):
        raise RuntimeError(f"Given input size per channel: ({_shape_str(L)}). Calculated output "
                           f"size per channel: ({_shape_str(out)}). Output size is too small")
    return (B, Cout) + out
