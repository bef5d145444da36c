"""Complex construction and phase: complex, polar, angle.

(real/imag/conj live in conversion.py, view_as_real/view_as_complex in views.py.)
Derivatives follow PyTorch's conjugate-Wirtinger convention.
"""
import numpy as np

from .._core.dispatch import overridable
from ._helpers import (Op, Tensor, _E, apply, broadcast_guard, check_tensor, default_float_np,
                       not_implemented, type_name, write_out)
from ._batching import _elementwise_rule
from .pointwise import where
from .._core import meta as _meta

__all__ = ["complex", "polar", "angle"]

_CPLX = {np.dtype(np.float32): np.dtype(np.complex64),
         np.dtype(np.float64): np.dtype(np.complex128)}


def _complex_kernel(xp, re, im):
    if re.dtype != im.dtype:
        raise RuntimeError(f"Expected object of scalar type {type_name(re.dtype)} but got scalar "
                           f"type {type_name(im.dtype)} for second argument")
    if re.dtype not in _CPLX:
        if re.dtype.kind == "f" and re.dtype.itemsize == 2 or re.dtype.kind == "V":
            raise RuntimeError("ComplexHalf is not supported by ember (NumPy has no complex32)")
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{type_name(re.dtype)} and {type_name(im.dtype)}")
    out = xp.empty(np.broadcast_shapes(re.shape, im.shape), dtype=_CPLX[re.dtype])
    out.real = re
    out.imag = im
    return out


def _complex_vjp(ctx, g, re, im):
    need = ctx.needs_input_grad
    return g.real if need[0] else None, g.imag if need[1] else None


def _complex_shape(re, im):
    return _meta.broadcast_shapes(re.shape, im.shape), re.dtype.to_complex()


COMPLEX = Op("complex", broadcast_guard(_complex_kernel), _complex_vjp, shape=_complex_shape,
             save_inputs=False, category="binary", batch=_elementwise_rule)


def _tensors(name, **args):
    for pos, (k, v) in enumerate(args.items()):
        check_tensor(name, k, pos + 1, v)


@overridable
def complex(real, imag, *, out=None):
    """Constructs a complex tensor with its real part equal to ``real`` and its imaginary
    part equal to ``imag``."""
    _tensors("complex", real=real, imag=imag)
    r = apply(COMPLEX, (real, imag), _E)
    return r if out is None else write_out(out, r)


@overridable
def polar(abs, angle, *, out=None):
    """Constructs a complex tensor whose elements are Cartesian coordinates corresponding to
    the polar coordinates with absolute value ``abs`` and angle ``angle``."""
    _tensors("polar", abs=abs, angle=angle)
    a, b = abs.dtype.np, angle.dtype.np
    if a.kind != "f" or b.kind != "f":  # bfloat16's kind is 'V'
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{type_name(a)} and {type_name(b)}")
    if a != b:
        raise RuntimeError(f"Expected object of scalar type {type_name(a)} but got scalar type "
                           f"{type_name(b)} for second argument")
    if a.itemsize == 2:
        not_implemented("polar_cpu", a)
    r = complex(abs * angle.cos(), abs * angle.sin())
    return r if out is None else write_out(out, r)


def _angle_kernel(xp, x):
    if x.dtype.kind == "c":
        return xp.angle(x)
    dt = x.dtype if x.dtype.kind == "f" else default_float_np()
    if x.dtype.kind == "V":  # bfloat16
        dt = x.dtype
    xf = x.astype(np.float32) if x.dtype.itemsize == 2 and x.dtype.kind in "fV" else x
    r = xp.where(xf < 0, np.pi, 0.0)
    r = xp.where(xf != xf, np.nan, r)
    return r.astype(dt)


def _angle_vjp(ctx, g, x):
    if not x.dtype.is_complex:
        return g * 0
    a = x.abs()
    a2 = a * a
    return where(a2 == 0, 0, g * x * 1j / a2)


def _angle_shape(x):
    return x.shape, _meta.float_dtype(x.dtype.to_real())


ANGLE = Op("angle", _angle_kernel, _angle_vjp, shape=_angle_shape, category="unary",
           batch=_elementwise_rule)


@overridable
def angle(input, *, out=None):
    """Computes the element-wise angle (in radians) of the given ``input`` tensor."""
    r = apply(ANGLE, (input,), _E)
    return r if out is None else write_out(out, r)


Tensor.angle = lambda self: apply(ANGLE, (self,), _E)


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "complex", "angle")
