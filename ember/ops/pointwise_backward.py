"""Fused first derivatives of tanh and sigmoid: ``tanh_backward`` and ``sigmoid_backward``.

``tanh``'s backward is ``grad * conj(1 - out * out)`` and ``sigmoid``'s
``grad * conj(out * (1 - out))`` (``out`` the forward result, torch's formulas and
argument order).  Run as ember ops those are three or four dispatched operators per
autograd node, each with a fresh temporary; here each is one operator whose kernel writes
into a single buffer, as torch's ``aten.tanh_backward``/``aten.sigmoid_backward`` are.
The scalar-function table's tanh/sigmoid derivatives call them, so eager, traced and
vmapped backward passes all run this one kernel.

Their own derivatives are written in ember ops (double backward, hessians): both are
linear in ``grad`` (so its gradient is the same op of ``conj(out)``) and antiholomorphic
in ``out`` (so its gradient is ``conj(gg) * d/d conj(out)``, torch's conjugate-Wirtinger
convention).  Compile and export lower their decompositions
(``ember.ops.decompositions.pointwise``).
"""
import numpy as np

from .._core.op import JVP_FROM_VJP, Op
from ._batching import _elementwise_rule
from ._helpers import _F32, _HALF, cj, not_implemented, promote_np, shape_broadcast

__all__ = []

_NP_ONES = {}


def _one(xp, dt):
    # a 0-d array: NumPy's fastest form of a scalar operand (a Python 1 costs a conversion);
    # cached for NumPy, made by any other array namespace in its own memory
    if xp is not np:
        return xp.ones((), dtype=dt)
    one = _NP_ONES.get(dt)
    if one is None:
        one = _NP_ONES[dt] = np.ones((), dt)
    return one


def _buffer(xp, t):
    # NumPy returns a scalar, not an array, for 0-d operands: later ops write into t
    return t if t.ndim else xp.asarray(t)


def _tanh_factor(xp, out):
    # 1 - out*out in one buffer
    t = _buffer(xp, xp.multiply(out, out))
    return xp.subtract(_one(xp, t.dtype), t, out=t)


def _sigmoid_factor(xp, out):
    # (1 - out) * out in one buffer
    t = _buffer(xp, xp.subtract(_one(xp, out.dtype), out))
    return xp.multiply(t, out, out=t)


def _fused_kernel(kernel_name, factor):
    """``grad * conj(factor(out))``: the factor's buffer receives the product where its
    shape is the result's; halves are computed in float32 and rounded once."""
    def kernel(xp, grad, output):
        dt = output.dtype
        if grad.dtype != dt or grad.shape != output.shape:
            return _general(xp, grad, output)
        if dt.kind not in "fc" or dt in _HALF:  # the backward pass's usual case skips this
            return _general(xp, grad, output)
        t = factor(xp, output)
        if dt.kind == "c":
            xp.conjugate(t, out=t)
        return xp.multiply(grad, t, out=t)

    def _general(xp, grad, output):  # mixed dtypes or shapes, halves, rejected dtypes
        dt = promote_np(grad, output)
        if dt.kind in "biu":
            not_implemented(kernel_name, dt)
        work = _F32 if dt in _HALF else dt
        grad = grad.astype(work, copy=False)
        t = factor(xp, output.astype(work, copy=False))
        if work.kind == "c":
            xp.conjugate(t, out=t)
        if t.shape == xp.broadcast_shapes(grad.shape, t.shape):
            xp.multiply(grad, t, out=t)
        else:  # grad broadcasts over the output: the product needs the larger buffer
            t = xp.multiply(grad, t)
        return t if work == dt else t.astype(dt)
    return kernel


def _tanh_backward_vjp(ctx, gg, grad, output):
    need = ctx.needs_input_grad
    return (TANH_BACKWARD(gg, cj(output)) if need[0] else None,
            cj(gg) * (grad * cj(output)) * -2 if need[1] else None)


def _sigmoid_backward_vjp(ctx, gg, grad, output):
    need = ctx.needs_input_grad
    return (SIGMOID_BACKWARD(gg, cj(output)) if need[0] else None,
            cj(gg) * (grad * (1 - 2 * cj(output))) if need[1] else None)


TANH_BACKWARD = Op("tanh_backward", _fused_kernel("tanh_backward_cpu", _tanh_factor),
                   _tanh_backward_vjp, shape=shape_broadcast, category="binary",
                   batch=_elementwise_rule, unsupported={"jvp": JVP_FROM_VJP},
                   doc="grad * conj(1 - output**2): tanh's derivative, as aten.tanh_backward")
SIGMOID_BACKWARD = Op("sigmoid_backward", _fused_kernel("sigmoid_backward_cpu", _sigmoid_factor),
                      _sigmoid_backward_vjp, shape=shape_broadcast, category="binary",
                      batch=_elementwise_rule, unsupported={"jvp": JVP_FROM_VJP},
                      doc="grad * conj(output * (1 - output)): sigmoid's derivative, as "
                          "aten.sigmoid_backward")
