"""Top-level forms torch exposes beside the Tensor methods: in-place variants
(``torch.abs_(x)``), the ``*_copy`` forms of the view operators (a view's values in
fresh memory, differentiable like the view), constants, and small predicates.

Each is written in ember operators, so autograd, vmap and overrides behave as for
the operators they call.
"""
import math

import numpy as np

from .._core import dtype as _dt
from .._core.op import Op
from .._core.tensor import Tensor
from ._batching import _elementwise_rule
from ._helpers import (_cast, check_tensor, def_binary, gated, overridable, promote_np,
                       shape_broadcast, type_name, write_out_exact)
from .views import view_as_complex, view_as_real

_INPLACE = ("abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ "
            "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ erf_ erfc_ exp2_ "
            "exp_ expm1_ fill_ fix_ floor_ frac_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ "
            "reciprocal_ round_ rsqrt_ sigmoid_ sin_ sinh_ sqrt_ tan_ tanh_ trunc_ zero_ "
            "detach_ addmv_ conj_physical_").split()

_VIEWS = ("as_strided detach diagonal expand narrow permute select squeeze t transpose unbind "
          "unfold unsqueeze split view").split()

__all__ = _INPLACE + [v + "_copy" for v in _VIEWS] + [
    "alias_copy", "view_as_real_copy", "view_as_complex_copy", "split_with_sizes",
    "split_with_sizes_copy", "negative_", "pi", "e", "inf", "nan", "newaxis", "is_nonzero",
    "is_same_size", "is_signed", "is_inference", "get_device", "detach", "fill", "rsub",
    "nextafter", "ldexp", "frexp", "mvlgamma", "_assert_async"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


def _inplace_form(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"In-place version of ``{name[:-1]}``: ``{name}(input, ...)`` is " \
                 f"``input.{name}(...)``."
    return overridable(fn)


for _n in _INPLACE:
    globals()[_n] = _inplace_form(_n)
negative_ = _inplace_form("neg_")
negative_.__name__ = "negative_"


def _copy_form(view_name):
    def fn(input, *args, out=None, **kwargs):
        r = getattr(input, view_name)(*args, **kwargs)
        r = type(r)(x.clone() for x in r) if isinstance(r, (tuple, list)) else r.clone()
        if out is not None:
            # torch's *_copy.out: the out's dtype must be the result's (no cast)
            if isinstance(r, Tensor):
                return write_out_exact(out, r)
            for o, x in zip(out, r):
                o.copy_(x)
            return out
        return r
    fn.__name__ = fn.__qualname__ = view_name + "_copy"
    fn.__doc__ = f"Performs the same operation as ``{view_name}``, but the result is a copy, " \
                 f"not a view."
    return overridable(fn)


for _n in _VIEWS:
    globals()[_n + "_copy"] = _copy_form(_n)
del _n


@overridable
def alias_copy(input, *, out=None):
    """A copy of ``input`` (torch: the copy form of ``alias``)."""
    r = input.clone()
    return r if out is None else write_out_exact(out, r)


@overridable
def view_as_real_copy(input, *, out=None):
    r = view_as_real(input).clone()
    return r if out is None else write_out_exact(out, r)


@overridable
def view_as_complex_copy(input, *, out=None):
    r = view_as_complex(input).clone()
    return r if out is None else write_out_exact(out, r)


@overridable
def split_with_sizes(input, split_sizes, dim=0):
    """Splits ``input`` into pieces of the given sizes along ``dim``."""
    total = input.shape[dim] if input.dim() else 0
    if sum(split_sizes) != total:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {total} "
                           f"(input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(split_sizes)}")
    return input.split(list(split_sizes), dim)


@overridable
def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    r = [x.clone() for x in split_with_sizes(input, split_sizes, dim)]
    if out is not None:
        for o, x in zip(out, r):
            o.copy_(x)
        return None
    return r


@overridable
def is_nonzero(input):
    """True if the single element of ``input`` is nonzero."""
    if input.numel() != 1:
        if input.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def _assert_async(input, assert_msg=None):
    """``assert input.is_nonzero()`` (torch's CPU meaning; on CUDA torch does not wait for
    it): RuntimeError with ``assert_msg``, or torch's message, when the one value is zero."""
    if not is_nonzero(input):
        raise RuntimeError("Expected Tensor with single nonzero value, but got zero"
                           if assert_msg is None else assert_msg)


@overridable
def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


@overridable
def is_signed(input):
    return input.is_signed()


@overridable
def is_inference(input):
    return input.is_inference()


@overridable
def get_device(input):
    return input.get_device()


@overridable
def detach(input):
    return input.detach()


@overridable
def fill(input, value):
    """A new tensor of ``input``'s shape and dtype filled with ``value``."""
    return input.clone().fill_(value)


@overridable
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub() received an invalid combination of arguments - got "
                        f"({type(input).__name__}, {type(other).__name__}), but expected one "
                        f"of:\n * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor "
                        f"input, Number other, Number alpha = 1)\n")
    from .pointwise import sub  # computed in the promoted dtype: negating first wraps uints
    return sub(other, input, alpha=alpha)


# ---- nextafter, ldexp, frexp, mvlgamma ----------------------------------------------------
def _nextafter_np(xp, a, b):
    if a.dtype.itemsize > 2:
        return xp.nextafter(a, b)
    # half types: one step of the 16-bit pattern (a float32 step would round back to a)
    a, b = xp.broadcast_arrays(a, b)
    bits = a.view(np.uint16).astype(np.int32)
    away = (b > a) == (a > 0)  # the magnitude grows
    step = xp.where(a == 0, (b < 0).astype(np.int32) << 15 | 1, bits + xp.where(away, 1, -1))
    r = step.astype(np.uint16).view(a.dtype)
    r = xp.where(a == b, b, r)  # nextafter(x, x) is x's twin y (-0.0 towards 0.0 gives 0.0)
    return xp.where((a != a) | (b != b), a + b, r)  # NaN in, NaN out


def _nextafter_vjp(ctx, g, a, b):
    # torch's formula: the one-ulp step is the identity for input, except where it is
    # already at other (nextafter(a, a) is a); other gets zeros
    from .creation import zeros_like
    from .pointwise import where
    return where(a != b, g, 0), zeros_like(b)


def _nextafter_jvp(out, ts, a, b):
    from .pointwise import where
    return None if ts[0] is None else where(a != b, ts[0], 0)


# judged on the promoted dtype: a bool tensor and a 0-dim double give double, as in torch
def _nextafter_kernel(xp, a, b):
    dt = promote_np(a, b)
    return _nextafter_np(xp, _cast(a, dt, xp), _cast(b, dt, xp))


NEXTAFTER = Op("nextafter", gated(_nextafter_kernel, "nextafter_cpu", "bic", n=2),
               _nextafter_vjp,
               jvp=_nextafter_jvp, shape=shape_broadcast, category="binary",
               batch=_elementwise_rule)
nextafter = def_binary("nextafter", NEXTAFTER, inplace=True, tensors=2)
nextafter.__doc__ = "The next floating-point value after ``input`` towards ``other``."


@overridable
def ldexp(input, other, *, out=None):
    """``input * 2 ** other``."""
    check_tensor("ldexp", "input", 1, input)
    check_tensor("ldexp", "other", 2, other)
    r = input * (2.0 ** other if not isinstance(other, Tensor) else other.exp2())
    return r if out is None else out.copy_(r)


def _ldexp_(self, other):
    return self.mul_(2.0 ** other if not isinstance(other, Tensor) else other.exp2())


Tensor.ldexp = ldexp
Tensor.ldexp_ = _ldexp_


@overridable
def frexp(input, *, out=None):
    """Decomposes ``input`` into mantissa and exponent: ``input = mantissa * 2 ** exponent``."""
    from ._return_types import structseq
    _frexp_type = structseq("frexp", ("mantissa", "exponent"))
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    a = input._data
    m, ex = np.frexp(a)
    from .._core.tensor import wrap
    mant, expo = wrap(m.astype(a.dtype, copy=False)), wrap(ex.astype(np.int32))
    if out is not None:
        out[0].copy_(mant)
        out[1].copy_(expo)
        return _frexp_type(out[0], out[1])
    return _frexp_type(mant, expo)


Tensor.frexp = frexp


@overridable
def mvlgamma(input, p, *, out=None):
    """Computes the multivariate log-gamma function with dimension ``p`` element-wise."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    dt = input.dtype
    if dt == _dt.bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if dt.is_complex:
        raise NotImplementedError(f"\"mvlgamma\" not implemented for '{type_name(dt)}'")
    x = input if dt.is_floating_point else input.to(_dt.get_default_dtype())
    from .creation import arange
    j = arange(p, dtype=x.dtype)
    r = (x.unsqueeze(-1) - j / 2).lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return r if out is None else out.copy_(r)


Tensor.mvlgamma = mvlgamma
Tensor.mvlgamma_ = lambda self, p: self.copy_(mvlgamma(self, p))


# ---- Tensor methods of the forms above -----------------------------------------------------
def _unsafe_split(self, split_size, dim=0):
    return self.split(split_size, dim)


Tensor.is_nonzero = is_nonzero
Tensor.is_same_size = is_same_size
Tensor.split_with_sizes = split_with_sizes
Tensor.narrow_copy = globals()["narrow_copy"]
Tensor.negative_ = lambda self: self.neg_()
Tensor.swapaxes_ = lambda self, axis0, axis1: self.transpose_(axis0, axis1)
Tensor.swapdims_ = lambda self, dim0, dim1: self.transpose_(dim0, dim1)
Tensor.unsafe_chunk = lambda self, chunks, dim=0: self.chunk(chunks, dim)
Tensor.unsafe_split = _unsafe_split
Tensor.unsafe_split_with_sizes = lambda self, split_sizes, dim=0: split_with_sizes(
    self, split_sizes, dim)
