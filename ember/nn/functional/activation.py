"""Activation functions (``torch.nn.functional`` activations).

Most are primitive Ops with a NumPy kernel and a derivative in ember ops (so double
backward works); the hot ones (relu, gelu, silu) save only what their derivative
needs.  Cheap ones (softsign, tanhshrink, glu, prelu, softmin) are composites.
Masks follow torch's backward formulas exactly at the boundaries (e.g. hardtanh's
gradient is zero at ``min_val`` and ``max_val``; relu's is zero at 0).
"""
import math

import numpy as np

from ..._core import ckernels as _ck
from ..._core.dispatch import overridable
from ..._core import meta as _meta
from ..._core.op import Op
from ..._core.tensor import Tensor
from ...ops._helpers import (_F32, _HALF, apply, apply_inplace, jvp_elementwise, not_implemented,
                             shape_same, special)
from ...ops.pointwise import where
from ...ops.softmax import log_softmax as _log_softmax
from ...ops.softmax import softmax as _softmax

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "sigmoid",
           "tanh", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "softplus", "softsign",
           "softmax", "log_softmax", "softmin", "glu", "threshold", "threshold_", "tanhshrink",
           "softshrink", "hardshrink", "logsigmoid"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float_kernel(name, fn, ints=False):
    """Kernel for a floating activation: halves computed in float32; ints rejected like torch
    (unless ``ints``: relu-like functions keep integer dtypes)."""
    def kernel(xp, x, **p):
        dt = x.dtype
        if dt in _HALF:
            return fn(xp, x.astype(_F32), **p).astype(dt)
        if dt.kind in "biuc" and not (ints and dt.kind in "iu"):
            not_implemented(name, dt)
        r = fn(xp, x, **p)
        return r if r.dtype == dt else r.astype(dt)
    return kernel


def _op(name, fn, vjp, *, save_output=False, ints=False, kname=None):
    # real elementwise: the Jacobian is diagonal, so the jvp is the vjp applied to the tangent
    return Op(name, _float_kernel(kname or name, fn, ints), vjp, shape=shape_same,
              save_inputs=not save_output, save_output=save_output, category="activation",
              jvp=jvp_elementwise(vjp) if vjp else None)


def _run(op, input, inplace, params):
    if inplace:
        return apply_inplace(op, input, (), params)
    return apply(op, (input,), params)


def _masked_kernel(xp, g, mask):
    # torch's threshold-style backward selects the gradient (nan/inf-safe); a multiply by the
    # mask is ~20x faster than xp.where, so select only where g has non-finite values
    r = g * mask
    if g.dtype.kind in "fc" and not xp.isfinite(g).all():
        r[~mask] = 0
    return r


MASKED_GRAD = Op("threshold_backward", _masked_kernel,
                 lambda ctx, gg, g, mask: (apply(MASKED_GRAD, (gg, mask), {}), None),
                 save_inputs=(1,), shape=lambda g, m: (g.shape, g.dtype), category="activation")


def _mask_grad(g, mask):
    return apply(MASKED_GRAD, (g, mask), {})


# ---- relu family ------------------------------------------------------------------------
RELU = _op("relu", lambda xp, x: xp.maximum(x, 0),
           # torch passes the gradient where not (out <= 0): at NaN too; out is >= 0 or NaN
           lambda ctx, g, x: _mask_grad(g, ctx.out != 0), save_output=True, ints=True,
           kname="clamp_min_cpu")


@overridable
def relu(input, inplace=False):
    """Applies the rectified linear unit function element-wise."""
    return _run(RELU, input, inplace, {})


@overridable
def relu_(input):
    return apply_inplace(RELU, input, (), {})


HARDTANH = _op("hardtanh", lambda xp, x, lo, hi: xp.clip(x, lo, hi),
               lambda ctx, g, x, lo, hi: _mask_grad(g, ((x <= lo) | (x >= hi)).logical_not()),
               ints=True,
               kname="hardtanh_cpu")


@overridable
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Applies the HardTanh function element-wise."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input._data.dtype == np.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _run(HARDTANH, input, inplace, {"lo": min_val, "hi": max_val})


@overridable
def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


@overridable
def relu6(input, inplace=False):
    """Applies the element-wise function ReLU6(x) = min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


LEAKY_RELU = _op("leaky_relu", lambda xp, x, slope: xp.where(x > 0, x, x * slope),
                 lambda ctx, g, x, slope: where(x > 0, g, g * slope))


@overridable
def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Applies LeakyReLU(x) = max(0, x) + negative_slope * min(0, x) element-wise."""
    return _run(LEAKY_RELU, input, inplace, {"slope": negative_slope})


@overridable
def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def _elu_np(xp, x, alpha, scale, iscale, iscale_grad=None):
    # torch's branches test x <= 0, so NaN takes the linear branch (value and gradient)
    return xp.where(x <= 0, xp.expm1(x * iscale) * (alpha * scale), x * scale)


def _elu_vjp(ctx, g, x, alpha, scale, iscale, iscale_grad=None):
    iscale = iscale if iscale_grad is None else iscale_grad
    return where(x <= 0, g * ((x * iscale).exp() * (alpha * scale * iscale)), g * scale)


ELU = _op("elu", _elu_np, _elu_vjp)


@overridable
def elu(input, alpha=1.0, inplace=False):
    """Applies the Exponential Linear Unit function element-wise."""
    return _run(ELU, input, inplace, {"alpha": alpha, "scale": 1.0, "iscale": 1.0})


@overridable
def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


@overridable
def selu(input, inplace=False):
    """Applies SELU(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))."""
    return _run(ELU, input, inplace, {"alpha": _SELU_ALPHA, "scale": _SELU_SCALE, "iscale": 1.0})


@overridable
def selu_(input):
    return selu(input, True)


@overridable
def celu(input, alpha=1.0, inplace=False):
    """Applies CELU(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    # torch's celu backward computes 1 / alpha from alpha rounded to float32
    return _run(ELU, input, inplace, {"alpha": alpha, "scale": 1.0, "iscale": 1.0 / alpha,
                                      "iscale_grad": 1.0 / float(np.float32(alpha))})


@overridable
def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def _rrelu_kernel(xp, x, lower, upper, generator=None):
    from ..._core import random as _rnd
    gen = (generator or _rnd.default_generator)._gen
    a = gen.uniform(lower, upper, size=x.shape).astype(x.dtype)
    a = xp.where(x >= 0, xp.ones((), x.dtype), a)
    return x * a, a


RRELU = Op("rrelu_with_noise", lambda xp, x, **p: _rrelu_kernel(xp, x, **p),
           lambda ctx, g, x, **p: (g[0] * ctx.out[1], ), save_inputs=False, save_output=True,
           n_out=2, nondiff_outputs=(1,), shape=lambda x, **p: (_meta.same(x), _meta.same(x)))


@overridable
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in eval."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    out, _ = apply(RRELU, (input,), {"lower": lower, "upper": upper})
    if inplace:
        from ..._core.dispatch import copy_into
        copy_into(input, out._data)
        return input
    return out


@overridable
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


@overridable
def prelu(input, weight):
    """Applies PReLU(x) = max(0, x) + weight * min(0, x), weight per channel (dim 1)."""
    n = weight.numel()
    if n != 1:
        if input.dim() == 0 or input.shape[1 if input.dim() > 1 else 0] != n:
            c = input.shape[1] if input.dim() > 1 else (input.shape[0] if input.dim() else 1)
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {c}.")
        w = weight.reshape((n,) + (1,) * (input.dim() - 2)) if input.dim() > 1 else weight
    else:
        w = weight.reshape(()) if weight.dim() else weight
    return where(input > 0, input, w * input)


# ---- smooth activations -----------------------------------------------------------------
_K = math.sqrt(2.0 / math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_np(xp, x, tanh):
    r = _ck.activation("gelu", x, tanh, ("f32",) if tanh else ("f32", "f64"))
    if r is not None:
        return r
    if tanh:
        return 0.5 * x * (1 + xp.tanh(_K * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1 + special(xp).erf(x * _INV_SQRT2))


def _gelu_vjp(ctx, g, x, tanh):
    r = _ck.activation_vjp("gelu", g, x, tanh)
    if r is not None:
        return r
    if tanh:
        x2 = x * x
        t = ((x + 0.044715 * x2 * x) * _K).tanh()
        d = 0.5 * (1 + t) + (0.5 * _K) * x * (1 - t * t) * (1 + 0.134145 * x2)
        return g * d
    cdf = 0.5 * (1 + (x * _INV_SQRT2).erf())
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


GELU = _op("gelu", _gelu_np, _gelu_vjp, kname="GeluKernelImpl")


@overridable
def gelu(input, approximate="none"):
    """Applies the Gaussian Error Linear Units function (exact, or tanh-approximated)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(GELU, (input,), {"tanh": approximate == "tanh"})


def _silu_vjp(ctx, g, x):
    r = _ck.activation_vjp("silu", g, x, dtypes=("f32",))
    if r is not None:
        return r
    s = x.sigmoid()
    return g * (s * (1 + x * (1 - s)))


def _silu_np(xp, x):
    r = _ck.activation("silu", x, dtypes=("f32",))
    return x * special(xp).expit(x) if r is None else r


SILU = _op("silu", _silu_np, _silu_vjp)


@overridable
def silu(input, inplace=False):
    """Applies the Sigmoid Linear Unit (SiLU) function, x * sigmoid(x), element-wise."""
    return _run(SILU, input, inplace, {})


def _softplus_np(xp, x, beta, threshold):
    z = x * beta
    return xp.where(z > threshold, x, xp.logaddexp(0, z) / beta)


def _softplus_vjp(ctx, g, x, beta, threshold):
    z = x * beta
    return where(z > threshold, g, g * z.sigmoid())


SOFTPLUS = _op("softplus", _softplus_np, _softplus_vjp)


@overridable
def softplus(input, beta=1.0, threshold=20.0):
    """Applies Softplus(x) = 1/beta * log(1 + exp(beta * x)), linear above ``threshold``."""
    return apply(SOFTPLUS, (input,), {"beta": beta, "threshold": threshold})


def _mish_np(xp, x):
    return x * xp.tanh(xp.logaddexp(0, x))


def _mish_vjp(ctx, g, x):
    t = apply(SOFTPLUS, (x,), {"beta": 1.0, "threshold": 20.0}).tanh()
    return g * (t + x * (1 - t * t) * x.sigmoid())


MISH = _op("mish", _mish_np, _mish_vjp)


@overridable
def mish(input, inplace=False):
    """Applies Mish(x) = x * tanh(softplus(x)) element-wise."""
    return _run(MISH, input, inplace, {})


LOGSIGMOID = _op("log_sigmoid", lambda xp, x: -xp.logaddexp(0, -x),
                 lambda ctx, g, x: g * (-x).sigmoid())


@overridable
def logsigmoid(input):
    """Applies LogSigmoid(x) = log(1 / (1 + exp(-x))) element-wise, computed stably."""
    return apply(LOGSIGMOID, (input,), {})


# torch's backward uses float32 constants even for float64 (matched for bitwise parity)
_SIXTH_F32 = float(np.float32(1.0) / np.float32(6.0))
HARDSIGMOID = _op("hardsigmoid", lambda xp, x: xp.clip(x / 6 + 0.5, 0, 1),
                  lambda ctx, g, x: _mask_grad(g * _SIXTH_F32, (x > -3) & (x < 3)))


@overridable
def hardsigmoid(input, inplace=False):
    """Applies the Hardsigmoid function element-wise: relu6(x + 3) / 6."""
    return _run(HARDSIGMOID, input, inplace, {})


def _hardswish_vjp(ctx, g, x):
    return where(x <= -3, 0, where(x < 3, g * (x / 3 + 0.5), g))


HARDSWISH = _op("hardswish", lambda xp, x: x * xp.clip(x + 3, 0, 6) / 6, _hardswish_vjp)


@overridable
def hardswish(input, inplace=False):
    """Applies the Hardswish function element-wise: x * relu6(x + 3) / 6."""
    return _run(HARDSWISH, input, inplace, {})


# torch tests x <= threshold: NaN passes through, with its gradient
THRESHOLD = _op("threshold", lambda xp, x, th, value: xp.where(x <= th, value, x),
                lambda ctx, g, x, th, value: _mask_grad(g, (x <= th).logical_not()), ints=True)


@overridable
def threshold(input, threshold, value, inplace=False):
    """Thresholds each element: x if x > threshold else value."""
    return _run(THRESHOLD, input, inplace, {"th": threshold, "value": value})


@overridable
def threshold_(input, threshold, value):
    return apply_inplace(THRESHOLD, input, (), {"th": threshold, "value": value})


SOFTSHRINK = _op("softshrink",
                 lambda xp, x, lambd: xp.where(xp.abs(x) <= lambd, 0, x - xp.sign(x) * lambd),
                 lambda ctx, g, x, lambd: _mask_grad(g, (x.abs() <= lambd).logical_not()))
# NaN is outside [-lambd, lambd] for torch: it passes through with its gradient
HARDSHRINK = _op("hardshrink", lambda xp, x, lambd: xp.where((x >= -lambd) & (x <= lambd), 0, x),
                 lambda ctx, g, x, lambd: _mask_grad(g, (x.abs() <= lambd).logical_not()))


@overridable
def softshrink(input, lambd=0.5):
    """Applies the soft shrinkage function element-wise."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return apply(SOFTSHRINK, (input,), {"lambd": lambd})


@overridable
def hardshrink(input, lambd=0.5):
    """Applies the hard shrinkage function element-wise."""
    return apply(HARDSHRINK, (input,), {"lambd": lambd})


# ---- composites -------------------------------------------------------------------------
@overridable
def sigmoid(input):
    """Applies the element-wise function 1 / (1 + exp(-x))."""
    return input.sigmoid()


@overridable
def tanh(input):
    """Applies the element-wise function tanh(x)."""
    return input.tanh()


@overridable
def tanhshrink(input):
    """Applies Tanhshrink(x) = x - tanh(x) element-wise."""
    return input - input.tanh()


@overridable
def softsign(input):
    """Applies SoftSign(x) = x / (1 + |x|) element-wise."""
    return input / (input.abs() + 1)


@overridable
def glu(input, dim=-1):
    """The gated linear unit: a * sigmoid(b) where input is split in half along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        d = dim % input.dim()
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.split(n // 2, dim)
    return a * b.sigmoid()


@overridable
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Applies softmax along ``dim``: exp(x) / sum(exp(x))."""
    return _softmax(input, dim, dtype)


@overridable
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Applies log(softmax(x)) along ``dim``, computed stably."""
    return _log_softmax(input, dim, dtype)


@overridable
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """Applies softmin along ``dim``: softmax(-x)."""
    return _softmax(-input, dim, dtype)


# Tensor methods torch has for these activations.
Tensor.relu = lambda self: apply(RELU, (self,), {})
Tensor.relu_ = lambda self: apply_inplace(RELU, self, (), {})
Tensor.hardshrink = lambda self, lambd=0.5: hardshrink(self, lambd)
Tensor.prelu = lambda self, weight: prelu(self, weight)
