"""Fused elementwise loss operators whose derivative torch defines on its own terms.

``binary_cross_entropy``'s logs are clamped at -100, and torch's derivative is the
closed form ``(x - y) / max(x (1 - x), 1e-12)``: finite (about +-1e12) where the input
is exactly 0 or 1, where differentiating the clamped composite would give 0 * inf = nan.
"""
from .._core.op import JVP_FROM_VJP, Op
from ._batching import _elementwise_rule
from ._helpers import shape_broadcast

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


BINARY_CROSS_ENTROPY = Op("binary_cross_entropy", _bce_kernel, _bce_vjp, shape=shape_broadcast,
                          category="binary", batch=_elementwise_rule,
                          unsupported={"jvp": JVP_FROM_VJP})  # its vjp is in ember ops
