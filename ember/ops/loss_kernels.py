"""Fused elementwise loss operators whose derivative torch defines on its own terms.

``mse_loss`` (equal shapes and dtypes; the functional takes the composite for anything
else) is ``(x - y) ** 2`` in one kernel, reduced by the kernels of ``mean``/``sum`` (their
values), and its gradient torch's ``alpha * (x - y) * g`` (``alpha = 2 / numel`` for a
mean, else 2) in one pass more when the backward runs plainly; the composite ``d * d``
then ``mean`` paid a full-size division for the mean's gradient and five passes more.

``binary_cross_entropy``'s logs are clamped at -100, and torch's derivative is the
closed form ``(x - y) / max(x (1 - x), 1e-12)``: finite (about +-1e12) where the input
is exactly 0 or 1, where differentiating the clamped composite would give 0 * inf = nan.
"""
import numpy as np

from .._core.ckernels import selection as _ck_sel
from .._core.op import JVP_FROM_VJP, Op
from ._batching import _elementwise_rule
from ._helpers import gated, shape_broadcast

__all__ = []

_EPS = 1e-12


def _bce_kernel(xp, x, y):
    # torch checks the range in the kernel: under vmap this sees the whole physical batch.
    # Its test is !(0 <= v <= 1), so NaN fails it too
    for what, v in (("input", x), ("target", y)):
        if v.size and not bool(((v >= 0) & (v <= 1)).all()):
            raise RuntimeError(f"all elements of {what} should be between 0 and 1")
    log_p = xp.maximum(xp.log(x), -100)
    log_q = xp.maximum(xp.log1p(-x), -100)
    return (-(y * log_p + (1 - y) * log_q)).astype(x.dtype, copy=False)


def _bce_vjp(ctx, g, x, y):
    need = ctx.needs_input_grad
    gx = g * (x - y) / (x * (1 - x)).clamp_min(_EPS) if need[0] else None
    # torch's target derivative is not clamped: +-inf where the input is exactly 0 or 1
    gy = g * ((1 - x).log() - x.log()) if need[1] else None
    return gx, gy


BINARY_CROSS_ENTROPY = Op("binary_cross_entropy",
                          gated(_bce_kernel, "binary_cross_entropy", "bic"), _bce_vjp, shape=shape_broadcast,
                          category="binary", batch=_elementwise_rule,
                          unsupported={"jvp": JVP_FROM_VJP})  # its vjp is in ember ops


def _mse_kernel(xp, x, y, reduction="none"):
    d = _ck_sel.mse(x, y)  # one C pass, NumPy's values
    if d is None:
        d = xp.subtract(x, y)
        d = xp.multiply(d, d, out=d)  # a fresh array: squared in place
    if reduction == "none":
        return d
    from .reduce_basic import _mean_kernel, _sum_kernel  # the values of loss.mean()/.sum()
    return (_mean_kernel if reduction == "mean" else _sum_kernel)(xp, d, tuple(range(d.ndim)),
                                                                  False)


def _mse_vjp(ctx, g, x, y, reduction="none"):
    # torch's mse_backward: alpha * (x - y) * g, alpha = 2 / numel for a mean, else 2
    need = ctx.needs_input_grad
    alpha = 2.0 / max(x.numel(), 1) if reduction == "mean" else 2.0
    from .._core import ckernels as _ck
    if _ck._plain(g, x, y) and type(g._data) is np.ndarray and type(x._data) is np.ndarray:
        gd = g._data
        d = _ck_sel.mse_backward(x._data, y._data, gd, alpha)  # one C pass
        if d is not None:
            return (_ck._wrap(d) if need[0] else None), (
                _ck._wrap(np.negative(d)) if need[1] else None)
        d = np.subtract(x._data, y._data)
        d *= np.asarray(alpha, d.dtype)
        if gd.ndim == 0 or not any(gd.strides):  # one value (a reduced loss's gradient)
            g0 = gd.reshape(-1)[0]
            if g0 != 1:  # times one is exact: skip the pass
                d *= g0
        else:
            d *= gd
        return (_ck._wrap(d) if need[0] else None), (
            _ck._wrap(np.negative(d)) if need[1] else None)
    # torch's kernel rounds alpha to the dtype (halves: each product rounds too)
    gd = (x - y) * x.new_full((), alpha) * g
    return (gd if need[0] else None), (-gd if need[1] else None)


def _mse_shape(x, y, reduction="none"):
    shape, dt = shape_broadcast(x, y)
    return (shape, dt) if reduction == "none" else ((), dt)


def _mse_batch(op, args, bdims, params, batch_size):
    red = params.get("reduction", "none")
    r, _ = _elementwise_rule(op, args, bdims, {"reduction": "none"}, batch_size)
    dims = tuple(range(1, r.dim()))
    if red == "none" or not dims:
        return r, 0
    return (r.mean(dims) if red == "mean" else r.sum(dims)), 0


MSE_LOSS = Op("mse_loss", _mse_kernel, _mse_vjp, shape=_mse_shape, category="binary",
              batch=_mse_batch, unsupported={"jvp": JVP_FROM_VJP})
