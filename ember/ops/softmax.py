"""softmax and log_softmax: fused primitives (hot in every classifier and attention).

Computed stably (max subtracted) in one kernel each, in float32 for half inputs;
their derivatives reuse the output: d softmax = y * (g - sum(g * y)),
d log_softmax = g - exp(y) * sum(g) (one C kernel along the last dimension when the
backward pass records no graph, else these formulas in ember ops).
"""

from .._core.dispatch import overridable
from .._core import ckernels as _ck
from .._core import meta as _meta
from .._core.tensor import _wrap_dim
from ._batching import _dims_rule
from ._helpers import Op, Tensor, _F32, _HALF, apply, default_float_np, not_implemented

__all__ = ["softmax", "log_softmax"]


def _prep(x, dtype):
    if dtype is not None:
        x = x.astype(dtype)
    elif x.dtype.kind in "biu":
        x = x.astype(default_float_np())
    return x


def _softmax_kernel(xp, x, dim, dtype=None):
    x = _prep(x, dtype)
    half = x.dtype in _HALF
    a = x.astype(_F32) if half else x
    e = _ck.softmax(a, dim, False, ("f32",))
    if e is None:
        m = a.max(axis=dim, keepdims=True) if a.size else a
        e = xp.exp(a - m)
        e /= e.sum(axis=dim, keepdims=True)
    return e.astype(x.dtype) if half else e


def _log_softmax_kernel(xp, x, dim, dtype=None):
    x = _prep(x, dtype)
    half = x.dtype in _HALF
    a = x.astype(_F32) if half else x
    s = _ck.softmax(a, dim, True, ("f32",))
    if s is None:
        m = a.max(axis=dim, keepdims=True) if a.size else a
        s = a - m
        s -= xp.log(xp.exp(s).sum(axis=dim, keepdims=True))
    return s.astype(x.dtype) if half else s


def _softmax_vjp(ctx, g, x, dim, dtype=None):
    y = ctx.out
    fused = _ck.softmax_vjp(g, y, dim, False)  # one C pass per row, over threads
    if fused is not None:
        return fused
    return y * (g - (g * y).sum(dim, keepdim=True))


def _log_softmax_vjp(ctx, g, x, dim, dtype=None):
    y = ctx.out
    fused = _ck.softmax_vjp(g, y, dim, True, ("f32",))
    if fused is not None:
        return fused
    return g - y.exp() * g.sum(dim, keepdim=True)


def _softmax_shape(x, dim, dtype=None):
    return x.shape, _meta.as_dtype(dtype) or _meta.float_dtype(x.dtype)


def _softmax_jvp(out, ts, x, dim, dtype=None):
    t = ts[0]
    return None if t is None else out * (t - (t * out).sum(dim, keepdim=True))


def _log_softmax_jvp(out, ts, x, dim, dtype=None):
    t = ts[0]
    return None if t is None else t - (t * out.exp()).sum(dim, keepdim=True)


SOFTMAX = Op("softmax", _softmax_kernel, _softmax_vjp, save_inputs=False, save_output=True,
             shape=_softmax_shape, jvp=_softmax_jvp, batch=_dims_rule)
LOG_SOFTMAX = Op("log_softmax", _log_softmax_kernel, _log_softmax_vjp, save_inputs=False,
                 save_output=True, shape=_softmax_shape, jvp=_log_softmax_jvp, batch=_dims_rule)


def _params(input, dim, dtype, name="softmax"):
    if dim is None:
        import warnings
        warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call "
                      "to include dim=X as an argument.", UserWarning, stacklevel=3)
        dim = 0 if input.dim() in (0, 1, 3) else 1
    nd = input.dim()
    p = {"dim": _wrap_dim(dim, nd)}
    if dtype is not None:
        p["dtype"] = dtype.np
    elif not input.dtype.is_floating_point and input.numel():
        # torch has no integer, bool or complex kernel; only an explicit dtype= casts first
        last = "lastdim_" if nd == 0 or p["dim"] == nd - 1 else ""
        not_implemented(f"{name}_{last}kernel_impl", input.dtype.np)
    return p


@overridable
def softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    """Softmax along ``dim``: exp(x) / sum(exp(x)), computed stably."""
    return apply(SOFTMAX, (input,), _params(input, dim, dtype))


@overridable
def log_softmax(input, dim=None, dtype=None, *, _stacklevel=3):
    """Logarithm of softmax along ``dim``, computed stably."""
    return apply(LOG_SOFTMAX, (input,), _params(input, dim, dtype, "log_softmax"))


Tensor.softmax = lambda self, dim, dtype=None: softmax(self, dim, dtype)
Tensor.log_softmax = lambda self, dim, dtype=None: log_softmax(self, dim, dtype)
