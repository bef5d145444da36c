"""The activation operators (behind ``torch.nn.functional``'s activations).

Each is a primitive with a NumPy kernel and a derivative in ember ops (so double
backward works); the hot ones (relu, gelu, silu) save only what their derivative
needs.  Masks follow torch's backward formulas exactly at the boundaries (e.g.
hardtanh's gradient is zero at ``min_val`` and ``max_val``; relu's is zero at 0).

gelu's and silu's first derivatives are operators of their own (``gelu_backward``,
``silu_backward``) whose kernels use the compiled C kernels when those fit and NumPy
otherwise: eager, traced and vmapped backward passes all run the same kernel, and
the derivative of these backward operators is written in ember ops.
"""
import math

import numpy as np

from ..._core import ckernels as _ck
from ..._core.ckernels import selection as _ck_sel
from ..._core import meta as _meta
from ..._core.op import Op
from .._batching import _elementwise_rule
from .._helpers import (_F32, _HALF, apply, jvp_elementwise, not_implemented, select,
                       shape_same, special, type_name)
from ..pointwise import where
from ._rules import random_rule

__all__ = []


def _float_kernel(name, fn, ints=False, complex_ok=False):
    """Kernel for a floating activation: halves computed in float32; ints rejected like torch
    (unless ``ints``: relu-like functions keep integer dtypes), complex too unless
    ``complex_ok``."""
    def kernel(xp, x, **p):
        dt = x.dtype
        if dt in _HALF:
            return fn(xp, x.astype(_F32), **p).astype(dt)
        if dt.kind in "biuc" and not (ints and dt.kind in "iu") and not (
                complex_ok and dt.kind == "c"):
            not_implemented(name, dt)
        r = fn(xp, x, **p)
        return r if r.dtype == dt else r.astype(dt)
    return kernel


def _op(name, fn, vjp, *, save_output=False, ints=False, kname=None, complex_ok=False):
    # real elementwise: the Jacobian is diagonal, so the jvp is the vjp applied to the tangent
    return Op(name, _float_kernel(kname or name, fn, ints, complex_ok), vjp, shape=shape_same,
              save_inputs=not save_output, save_output=save_output, category="activation",
              jvp=jvp_elementwise(vjp) if vjp else None, batch=_elementwise_rule)


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _masked_kernel(xp, g, mask):
    # torch's threshold-style backward selects the gradient (nan/inf-safe, +0.0 where masked
    # out).  xp.where is ~15x slower than a multiply here; a multiply of the gradient's bits by
    # the mask is that select exactly, in one pass
    u = _UINT.get(g.dtype.itemsize) if g.dtype.kind in "fV" else None
    if u is not None:
        return (g.view(u) * mask).view(g.dtype)
    r = g * mask
    if g.dtype.kind in "fc" and not xp.isfinite(_distinct(g)).all():
        r[~mask] = 0
    return r


def _distinct(a):
    """``a`` without its zero-stride (broadcast) dimensions: the same elements, each once
    (the gradient of a sum is one scalar broadcast to the input's shape)."""
    if 0 not in a.strides:
        return a
    return a[tuple(slice(0, 1) if s == 0 else slice(None) for s in a.strides)]


MASKED_GRAD = Op("threshold_backward", _masked_kernel,
                 lambda ctx, gg, g, mask: (apply(MASKED_GRAD, (gg, mask), {}), None),
                 save_inputs=(1,), shape=lambda g, m: (g.shape, g.dtype), category="activation",
                 batch=_elementwise_rule)


def _mask_grad(g, mask):
    return apply(MASKED_GRAD, (g, mask), {})


# ---- relu family ------------------------------------------------------------------------
def _relu_np(xp, x):
    # torch: x < 0 ? 0 : x (NaN and -0.0 pass); the C loop is 4x faster than np.maximum,
    # which also turns -0.0 into 0.0: without the loop, floats select on their bits
    y = _ck_sel.relu(x)
    if y is not None:
        return y
    u = _UINT.get(x.dtype.itemsize) if x.dtype.kind == "f" else None
    if u is None:
        return xp.maximum(x, 0)
    x1 = x.reshape(1) if x.ndim == 0 else x  # NumPy gives scalars for 0-d comparisons
    keep = x1 < 0
    xp.logical_not(keep, out=keep)
    return (x1.view(u) * keep).view(x.dtype).reshape(x.shape)


def _relu_vjp(ctx, g, x):
    # torch passes the gradient where not (out <= 0): at NaN too; out is >= 0 or NaN
    y = ctx.out
    if _ck._plain(g, y):  # one C select when no graph is recorded and no mode is active
        r = _ck_sel.relu_backward(g._data, y._data)
        if r is not None:
            return _ck._wrap(r)
    return _mask_grad(g, y != 0)


RELU = _op("relu", _relu_np, _relu_vjp, save_output=True, ints=True, kname="clamp_min_cpu")


HARDTANH = _op("hardtanh", lambda xp, x, lo, hi: xp.clip(x, lo, hi),
               lambda ctx, g, x, lo, hi: _mask_grad(g, ((x <= lo) | (x >= hi)).logical_not()),
               ints=True,
               kname="hardtanh_cpu")


def _leaky_relu_np(xp, x, slope):
    # torch: x > 0 ? x : x * slope.  For a finite slope in (0, 1] that is max(x, x * slope)
    # exactly (signed zeros and NaN included), above 1 the min: one pass fewer than a select
    y = x * slope
    if 0 < slope <= 1:
        return xp.maximum(x, y)
    if 1 < slope < math.inf:
        return xp.minimum(x, y)
    return select(xp, x > 0, x, y)


def _leaky_relu_backward_np(xp, g, x, slope):
    # torch: x > 0 ? g : g * slope, halves in float32
    g, x = _same_shape(xp, g, x)
    dt = x.dtype
    if dt in _HALF:
        return select(xp, x > 0, g, (g.astype(_F32) * slope).astype(dt))
    return select(xp, x > 0, g, g * slope)


def _leaky_relu_backward_vjp(ctx, gg, g, x, slope):
    # linear in g; the derivative in x is zero almost everywhere (torch's too)
    return apply(LEAKY_RELU_BACKWARD, (gg, x), {"slope": slope}), None


LEAKY_RELU_BACKWARD = Op("leaky_relu_backward", _leaky_relu_backward_np,
                         _leaky_relu_backward_vjp, save_inputs=(1,),
                         shape=lambda g, x, **p: _backward_shape(g, x),
                         category="activation", batch=_elementwise_rule)
LEAKY_RELU = _op("leaky_relu", _leaky_relu_np,
                 lambda ctx, g, x, slope: apply(LEAKY_RELU_BACKWARD, (g, x), {"slope": slope}))


def _elu_np(xp, x, alpha, scale, iscale, iscale_grad=None):
    # torch's branches test x <= 0, so NaN takes the linear branch (value and gradient)
    return xp.where(x <= 0, xp.expm1(x * iscale) * (alpha * scale), x * scale)


def _elu_vjp(ctx, g, x, alpha, scale, iscale, iscale_grad=None):
    iscale = iscale if iscale_grad is None else iscale_grad
    return where(x <= 0, g * ((x * iscale).exp() * (alpha * scale * iscale)), g * scale)


ELU = _op("elu", _elu_np, _elu_vjp)


def _rrelu_kernel(xp, x, lower, upper, generator=None):
    if x.dtype.kind == "c":  # torch's CPU kernel has no complex instance
        raise NotImplementedError(
            f"\"rrelu_with_noise_out_cpu\" not implemented for '{type_name(x.dtype)}'")
    from ..._core import random as _rnd
    gen = (generator or _rnd.default_generator)._gen
    a = xp.asarray(gen.uniform(lower, upper, size=x.shape)).astype(x.dtype)  # host draw
    a = xp.where(x >= 0, xp.ones((), x.dtype), a)
    return x * a, a


RRELU = Op("rrelu_with_noise", lambda xp, x, **p: _rrelu_kernel(xp, x, **p),
           lambda ctx, g, x, **p: (g[0] * ctx.out[1], ), save_inputs=False, save_output=(1,),
           n_out=2, nondiff_outputs=(1,), shape=lambda x, **p: (_meta.same(x), _meta.same(x)),
           batch=random_rule)


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


def _gelu_backward_np(xp, g, x, tanh):
    if tanh:
        x2 = x * x
        t = xp.tanh(_K * (x + 0.044715 * x2 * x))
        return g * (0.5 * (1 + t) + (0.5 * _K) * x * (1 - t * t) * (1 + 0.134145 * x2))
    cdf = 0.5 * (1 + special(xp).erf(x * _INV_SQRT2))
    pdf = xp.exp(x * x * -0.5) * _INV_SQRT_2PI
    return g * (cdf + x * pdf)


def _silu_backward_np(xp, g, x):
    s = special(xp).expit(x)
    return g * (s * (1 + x * (1 - s)))


def _same_shape(xp, g, x):
    """``g`` and ``x`` of one shape, ``g`` contiguous in ``x``'s dtype (e.g. the zero-stride
    gradient of a sum: one copy lets the C kernels run)."""
    if g.shape != x.shape or g.dtype != x.dtype or not g.flags.c_contiguous:
        shape = np.broadcast_shapes(g.shape, x.shape)
        g = xp.ascontiguousarray(xp.broadcast_to(g, shape), dtype=x.dtype)
        if x.shape != shape:
            x = xp.ascontiguousarray(xp.broadcast_to(x, shape))
    return g, x


def _backward_kernel(name, numpy_form, c_dtypes):
    """``g * d act(x)/dx``: the C kernel where the arrays fit it, else the NumPy form
    (halves computed in float32)."""
    def kernel(xp, g, x, **p):
        g, x = _same_shape(xp, g, x)
        r = _ck.activation_backward(name, g, x, p.get("tanh", False), c_dtypes)
        if r is not None:
            return r
        dt = x.dtype
        if dt in _HALF:
            return numpy_form(xp, g.astype(_F32), x.astype(_F32), **p).astype(dt)
        r = numpy_form(xp, g, x, **p)
        return r if r.dtype == dt else r.astype(dt)
    return kernel


def _gelu_dd(x, tanh):
    """d^2 gelu / dx^2 in ember ops."""
    if tanh:
        x2 = x * x
        t = ((x + 0.044715 * x2 * x) * _K).tanh()
        du = (1 + 0.134145 * x2) * _K
        return (1 - t * t) * (du - x * t * du * du + (3 * 0.044715 * _K) * x2)
    return (x * x * -0.5).exp() * _INV_SQRT_2PI * (2 - x * x)


def _silu_dd(x):
    s = x.sigmoid()
    return s * (1 - s) * (2 + x * (1 - 2 * s))


def _gelu_backward_vjp(ctx, gg, g, x, tanh):
    need = ctx.needs_input_grad
    return (GELU_BACKWARD(gg, x, tanh=tanh) if need[0] else None,
            gg * g * _gelu_dd(x, tanh) if need[1] else None)


def _silu_backward_vjp(ctx, gg, g, x):
    need = ctx.needs_input_grad
    return (SILU_BACKWARD(gg, x) if need[0] else None,
            gg * g * _silu_dd(x) if need[1] else None)


def _backward_shape(g, x, **p):
    return _meta.broadcast_shapes(g.shape, x.shape), x.dtype


GELU_BACKWARD = Op("gelu_backward", _backward_kernel("gelu", _gelu_backward_np, ("f32", "f64")),
                   _gelu_backward_vjp, shape=_backward_shape,
                   category="activation", batch=_elementwise_rule)
SILU_BACKWARD = Op("silu_backward", _backward_kernel("silu", _silu_backward_np, ("f32",)),
                   _silu_backward_vjp, shape=_backward_shape,
                   category="activation", batch=_elementwise_rule)


def _gelu_vjp(ctx, g, x, tanh):
    return GELU_BACKWARD(g, x, tanh=tanh)


def _silu_vjp(ctx, g, x):
    return SILU_BACKWARD(g, x)


GELU = _op("gelu", _gelu_np, _gelu_vjp, kname="GeluKernelImpl")


def _silu_np(xp, x):
    if x.dtype.kind == "c":  # torch computes complex silu (without a derivative)
        return x / (1 + xp.exp(-x))
    r = _ck.activation("silu", x, dtypes=("f32",))
    return x * special(xp).expit(x) if r is None else r


SILU = _op("silu", _silu_np, _silu_vjp, complex_ok=True)


def _softplus_np(xp, x, beta, threshold):
    # torch's formula, log1p(exp(z)) / beta: NumPy's logaddexp is a scalar loop (~20x slower
    # than its vectorised exp and log1p); few elements pass the threshold, so where is cheap
    z = x * beta
    with np.errstate(over="ignore"):  # exp overflows where z > threshold takes x
        r = xp.log1p(xp.exp(z))
    if beta != 1:
        r /= beta
    return xp.where(z > threshold, x, r)


def _softplus_vjp(ctx, g, x, beta, threshold):
    z = x * beta
    return where(z > threshold, g, g * z.sigmoid())


SOFTPLUS = _op("softplus", _softplus_np, _softplus_vjp)


def _mish_np(xp, x):
    return x * xp.tanh(xp.logaddexp(0, x))


def _mish_vjp(ctx, g, x):
    t = apply(SOFTPLUS, (x,), {"beta": 1.0, "threshold": 20.0}).tanh()
    return g * (t + x * (1 - t * t) * x.sigmoid())


MISH = _op("mish", _mish_np, _mish_vjp)


def _log_sigmoid_np(xp, x):
    # torch's form, min(x, 0) - log1p(exp(-|x|)): NumPy's logaddexp is a scalar loop
    return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))


LOGSIGMOID = _op("log_sigmoid", _log_sigmoid_np, lambda ctx, g, x: g * (-x).sigmoid())


# torch's backward uses float32 constants even for float64 (matched for bitwise parity)
_SIXTH_F32 = float(np.float32(1.0) / np.float32(6.0))
HARDSIGMOID = _op("hardsigmoid", lambda xp, x: xp.clip(x / 6 + 0.5, 0, 1),
                  lambda ctx, g, x: _mask_grad(g * _SIXTH_F32, (x > -3) & (x < 3)))


def _hardswish_vjp(ctx, g, x):
    return where(x <= -3, 0, where(x < 3, g * (x / 3 + 0.5), g))


HARDSWISH = _op("hardswish", lambda xp, x: x * xp.clip(x + 3, 0, 6) / 6, _hardswish_vjp)


# torch tests x <= threshold: NaN passes through, with its gradient
THRESHOLD = _op("threshold", lambda xp, x, th, value: xp.where(x <= th, value, x),
                lambda ctx, g, x, th, value: _mask_grad(g, (x <= th).logical_not()), ints=True)


SOFTSHRINK = _op("softshrink",
                 lambda xp, x, lambd: xp.where(xp.abs(x) <= lambd, 0, x - xp.sign(x) * lambd),
                 lambda ctx, g, x, lambd: _mask_grad(g, (x.abs() <= lambd).logical_not()))
# NaN is outside [-lambd, lambd] for torch: it passes through with its gradient
HARDSHRINK = _op("hardshrink", lambda xp, x, lambd: xp.where((x >= -lambd) & (x <= lambd), 0, x),
                 lambda ctx, g, x, lambd: _mask_grad(g, (x.abs() <= lambd).logical_not()))


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP,
                 "gelu_backward", "silu_backward", "threshold_backward", "rrelu_with_noise",
                 "leaky_relu_backward")
