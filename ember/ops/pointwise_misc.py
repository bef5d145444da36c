"""More elementwise operators: square, logaddexp(2), rad2deg/deg2rad, heaviside, gcd/lcm,
the top-level in-place forms torch exposes (``torch.xlogy_``, ``torch.square_``, ...) and
the top-level aliases of special functions (``torch.sinc``, ``torch.i0``, ``torch.igamma``).

(Kept apart from ``pointwise.py`` only to keep files small; the conventions are the same.)
"""

from .._core import meta as _meta
from ._batching import _elementwise_rule
from ._helpers import (Op, Tensor, binary_kernel, check_castable, def_binary, def_unary, gated,
                       no_derivative, overridable, shape_broadcast, table_vjp, unary_float,
                       write_out)
from .._core import scalar_functions as _sf
from .pointwise import pow

__all__ = ["square", "square_", "logaddexp", "logaddexp2", "rad2deg", "rad2deg_", "deg2rad",
           "deg2rad_", "heaviside", "gcd", "gcd_", "lcm", "lcm_", "xlogy_", "sinc", "sinc_",
           "i0", "i0_", "igamma", "igammac"]

# ---- square -----------------------------------------------------------------------------
@overridable
def square(input, *, out=None):
    """Returns a new tensor with the square of the elements of ``input``."""
    r = pow(input, 2)
    return r if out is None else write_out(out, r)


@overridable
def square_(input):
    """In-place version of `square`."""
    return input.pow_(2)


Tensor.square = lambda self: pow(self, 2)
Tensor.square_ = lambda self: self.pow_(2)


# ---- logaddexp, logaddexp2 --------------------------------------------------------------
_LOGADDEXP = _sf.get("logaddexp").numpy


def _logaddexp_np(xp, a, b):
    if a.dtype.kind != "c":
        return _LOGADDEXP(xp, a, b)
    # complex: factor out the operand with the larger real part so exp cannot overflow
    m = xp.where(a.real >= b.real, a, b)
    return m + xp.log1p(xp.exp(a + b - m - m))


_logaddexp_vjp = table_vjp(_sf.get("logaddexp"))
_logaddexp2_vjp = table_vjp(_sf.get("logaddexp2"))
_logaddexp2_np = _sf.get("logaddexp2").numpy


LOGADDEXP = Op("logaddexp", gated(binary_kernel(_logaddexp_np), "logaddexp_cpu", "bi", n=2),
               _logaddexp_vjp, shape=shape_broadcast, save_output=True, category="binary",
               batch=_elementwise_rule)
LOGADDEXP2 = Op("logaddexp2", gated(binary_kernel(_logaddexp2_np), "logaddexp2_cpu", "bic", n=2),
                _logaddexp2_vjp, shape=shape_broadcast, save_output=True, category="binary",
                batch=_elementwise_rule)
logaddexp = def_binary("logaddexp", LOGADDEXP, inplace=False, tensors=2)
logaddexp2 = def_binary("logaddexp2", LOGADDEXP2, inplace=False, tensors=2)
logaddexp.__doc__ = "Logarithm of the sum of exponentiations of the inputs."
logaddexp2.__doc__ = "Logarithm of the sum of exponentiations of the inputs in base-2."


# ---- rad2deg, deg2rad -------------------------------------------------------------------
def _angle_op(name):
    def no_complex(dt):
        raise RuntimeError(f"{name} is not supported for complex tensors.")
    sf = _sf.get(name)
    kernel = gated(unary_float(sf.numpy), no_complex, "c")
    op = Op(name, kernel, table_vjp(sf), shape=_meta.unary_float,
            save_inputs=False, category="unary", batch=_elementwise_rule)
    return op, def_unary(name, op, cast_first=False)


RAD2DEG, rad2deg = _angle_op("rad2deg")
DEG2RAD, deg2rad = _angle_op("deg2rad")


# ---- heaviside --------------------------------------------------------------------------
_heaviside_np = _sf.get("heaviside").numpy


def _heaviside_checked(kernel):
    def k(xp, x, values):
        if x.dtype.kind == "c" or values.dtype.kind == "c":
            raise RuntimeError("heaviside is not yet implemented for complex tensors.")
        if x.dtype != values.dtype:
            raise RuntimeError("heaviside is not yet implemented for tensors with different "
                               "dtypes.")
        return kernel(xp, x, values)
    return k


HEAVISIDE = Op("heaviside", _heaviside_checked(binary_kernel(_heaviside_np)),
               **no_derivative("heaviside", aten=True), shape=shape_broadcast, save_inputs=False,
               category="binary", batch=_elementwise_rule)
heaviside = def_binary("heaviside", HEAVISIDE, tensors=2)
heaviside.__doc__ = "Computes the Heaviside step function for each element in ``input``."


# ---- gcd, lcm ---------------------------------------------------------------------------
GCD = Op("gcd", gated(binary_kernel(_sf.get("gcd").numpy), "gcd_cpu", "bfc", n=2), None,
         shape=shape_broadcast, differentiable=False, save_inputs=False, category="binary",
         batch=_elementwise_rule)
LCM = Op("lcm", gated(binary_kernel(_sf.get("lcm").numpy), "lcm_cpu", "bfc", n=2), None,
         shape=shape_broadcast, differentiable=False, save_inputs=False, category="binary",
         batch=_elementwise_rule)
gcd = def_binary("gcd", GCD, tensors=2)
lcm = def_binary("lcm", LCM, tensors=2)
gcd.__doc__ = "Computes the element-wise greatest common divisor (GCD) of input and other."
lcm.__doc__ = "Computes the element-wise least common multiple (LCM) of input and other."


# ---- top-level in-place forms -----------------------------------------------------------
def _inplace_function(name, doc):
    def fn(input, *args):
        return getattr(input, name)(*args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return overridable(fn)


rad2deg_ = _inplace_function("rad2deg_", "In-place version of `rad2deg`.")
deg2rad_ = _inplace_function("deg2rad_", "In-place version of `deg2rad`.")
gcd_ = _inplace_function("gcd_", "In-place version of `gcd`.")
lcm_ = _inplace_function("lcm_", "In-place version of `lcm`.")
xlogy_ = _inplace_function("xlogy_", "In-place version of `xlogy`.")
sinc_ = _inplace_function("sinc_", "In-place version of `sinc`.")
i0_ = _inplace_function("i0_", "In-place version of `i0`.")


# ---- special functions torch also has at top level --------------------------------------
# Their operators are declared in ember.ops.special, which is loaded after this module (it
# is built on it), hence the imports at call time; ember.special exposes the same operators.
def _out(r, out):
    return r if out is None else write_out(out, r)


@overridable
def sinc(input, *, out=None):
    """Computes the normalized sinc of ``input`` (see `ember.special.sinc`)."""
    from .special.unary import SINC
    return _out(SINC(input), out)


@overridable
def i0(input, *, out=None):
    """Zeroth-order modified Bessel function of the first kind (see `ember.special.i0`)."""
    from .special.unary import I0
    if isinstance(out, Tensor) and isinstance(input, Tensor):
        # torch settles out's dtype before its kernel refuses a complex input
        check_castable(_meta.unary_float(input)[1], out.dtype)
    return _out(I0(input), out)


def _incomplete_gamma(name, op, input, other, out):
    from .special.binary import check_tensor
    check_tensor(f"special_{name}", "input", 1, input)
    check_tensor(f"special_{name}", "other", 2, other)
    return _out(op(input, other), out)


@overridable
def igamma(input, other, *, out=None):
    """Regularized lower incomplete gamma function (see `ember.special.gammainc`)."""
    from .special.binary import GAMMAINC
    return _incomplete_gamma("gammainc", GAMMAINC, input, other, out)


@overridable
def igammac(input, other, *, out=None):
    """Regularized upper incomplete gamma function (see `ember.special.gammaincc`)."""
    from .special.binary import GAMMAINCC
    return _incomplete_gamma("gammaincc", GAMMAINCC, input, other, out)


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "logaddexp", "logaddexp2", "rad2deg", "deg2rad", "heaviside")
