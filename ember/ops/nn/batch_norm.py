"""Batch normalization as torch's functional ATen operators.

``_native_batch_norm_legit_functional(input, weight, bias, running_mean, running_var,
training, momentum, eps)`` returns ``(out, save_mean, save_rstd, new_running_mean,
new_running_var)``: the normalized and scaled input, the batch statistics per channel, and
the running statistics after this batch (``running * (1 - momentum) + batch * momentum``,
the variance unbiased).  ``_native_batch_norm_legit`` is the form without running
statistics (``(out, save_mean, save_rstd)``), ``_native_batch_norm_legit_no_training``
the evaluation form (``(out, empty, empty)``, normalized by the running statistics).
``F.batch_norm`` calls them and writes the new running statistics back into its buffers,
so a captured graph holds one node per batch norm, as torch's export graphs do, and the
writes are buffer mutations.

One kernel computes all outputs in one pass over the input (the fused normalize kernel;
in evaluation a per-channel scale and shift precomputed from the running statistics, then
one C pass, `ckernels.conv.channel_affine`), halves in float32, rounded once.  The derivative is written in ember ops over the
normalization gradient (`normalization._normalize_backward`), so double backward works;
the decompositions (`ember.ops.decompositions.nn`) are what compile and export lower.
"""
import numpy as np

from ..._core.ckernels import conv as _ck
from ..._core.op import JVP_FROM_VJP, Op
from .._batching import _batched_front
from .conv import _compute
from ..creation import zeros_like
from .normalization import NORMALIZE_BACKWARD, _normalize_kernel

__all__ = []


def _stat_dims(ndim):
    return (0,) + tuple(range(2, ndim))


def _channel_shape(ndim, c):
    return (c,) + (1,) * (ndim - 2)


def _count(shape):
    n = 1
    for d in _stat_dims(len(shape)):
        n *= shape[d]
    return n


def _affine(xp, y, weight, bias, shape):
    if weight is not None:
        y = y * _compute(weight)[0].reshape(shape)
    if bias is not None:
        y = y + _compute(bias)[0].reshape(shape)
    return y


def _running(xp, running, batch_stat, momentum):
    t = running.dtype.type
    return running * t(1 - momentum) + batch_stat.astype(running.dtype) * t(momentum)


def _train_kernel(xp, x, weight, bias, running_mean, running_var, momentum, eps):
    a, back = _compute(x)
    c = a.shape[1]
    shape = _channel_shape(a.ndim, c)
    xhat, mean, rstd = _normalize_kernel(xp, a, _stat_dims(a.ndim), eps)
    out = _affine(xp, xhat, weight, bias, shape)
    mean, rstd = mean.reshape(c), rstd.reshape(c)
    stats = []
    if running_mean is not None:
        stats.append(_running(xp, running_mean, mean, momentum))
    if running_var is not None:
        n = _count(a.shape)
        r = rstd.astype(xp.float64)   # the unbiased variance, from the statistics kept
        stats.append(_running(xp, running_var, (1.0 / (r * r) - eps) * (n / (n - 1)),
                              momentum))
    if back is not None:
        out, mean, rstd = out.astype(back), mean.astype(back), rstd.astype(back)
    return (out, mean, rstd, *stats)


def _eval_kernel(xp, x, weight, bias, running_mean, running_var, eps):
    a, back = _compute(x)
    shape = _channel_shape(a.ndim, a.shape[1])
    scale = 1.0 / xp.sqrt(_compute(running_var)[0] + a.dtype.type(eps))
    scale = scale.astype(a.dtype, copy=False)
    if weight is not None:
        scale = scale * _compute(weight)[0]
    shift = -_compute(running_mean)[0].astype(a.dtype, copy=False) * scale
    if bias is not None:
        shift = shift + _compute(bias)[0]
    out = _scale_shift(xp, a, scale, shift, shape)
    empty = xp.zeros((0,), dtype=out.dtype)
    if back is not None:
        out, empty = out.astype(back), empty.astype(back)
    return out, empty, empty


def _scale_shift(xp, a, scale, shift, shape):
    """``a * scale + shift`` per channel into one new array: one C pass (`channel_affine`),
    else two NumPy passes writing into the same output."""
    if xp is np:
        out = _ck.channel_affine(a, scale, shift)
        if out is not None:
            return out
    out = a * scale.reshape(shape)
    out += shift.reshape(shape)
    return out


def _functional_kernel(xp, x, weight, bias, running_mean, running_var, training, momentum,
                       eps):
    if not training:
        out, empty, _ = _eval_kernel(xp, x, weight, bias, running_mean, running_var, eps)
        return out, empty, empty, running_mean.copy(), running_var.copy()
    return _train_kernel(xp, x, weight, bias, running_mean, running_var, momentum, eps)


def _no_stats_kernel(xp, x, weight, bias, training, momentum, eps):
    if not training:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    return _train_kernel(xp, x, weight, bias, None, None, momentum, eps)


def _no_training_kernel(xp, x, weight, bias, running_mean, running_var, momentum, eps):
    return _eval_kernel(xp, x, weight, bias, running_mean, running_var, eps)


# ---- the derivative ------------------------------------------------------------------------

def _grads(ctx, g, x, weight, mean, rstd, g_mean=None, g_rstd=None, eval_stats=None):
    """(d input, d weight, d bias) of out = xhat * weight + bias, where xhat normalizes x by
    (mean, rstd) of the batch (training: ``g_mean``/``g_rstd`` are those outputs'
    gradients; the statistics are outputs of the op, so a second derivative sees their
    dependence on x) or by ``eval_stats`` (running mean, rstd)."""
    need = ctx.needs_input_grad
    c = x.shape[1]
    dims = _stat_dims(x.dim())
    shape = _channel_shape(x.dim(), c)
    stat_shape = (1,) + shape   # the statistics as the normalization gradient takes them
    if eval_stats is not None:
        mean, rstd = eval_stats
    rstd_c = rstd.reshape(stat_shape)
    xhat = (x - mean.reshape(stat_shape)) * rstd_c
    gx = gw = gb = None
    if g is None:  # only the statistics are used: weight and bias do not move them
        if eval_stats is not None or not need[0]:
            return gx, gw, gb
        need = (True, False, False)
        g = zeros_like(x)
    if need[0]:
        gxh = g if weight is None else g * weight.reshape(shape)
        if eval_stats is not None:
            gx = gxh * rstd_c
        else:
            gx = NORMALIZE_BACKWARD(
                gxh, None if g_mean is None else g_mean.reshape(stat_shape),
                None if g_rstd is None else g_rstd.reshape(stat_shape), xhat, rstd_c,
                dims=dims, n=_count(tuple(x.shape)))
    if weight is not None and need[1]:
        gw = (g * xhat).sum(dims)
    if need[2]:   # bias is not saved (None here); needs_input_grad says it was given
        gb = g.sum(dims)
    return gx, gw, gb


def _eval_stats(running_mean, running_var, eps):
    return running_mean, (running_var + eps).rsqrt()


def _functional_vjp(ctx, grads, x, weight, bias, running_mean, running_var, training,
                    momentum, eps):
    # the running statistics are written in place after the op: the vjp reads its own
    # outputs (unchanged running statistics when not training), never those inputs
    _, mean, rstd, same_mean, same_var = ctx.out
    if not training:
        return (*_grads(ctx, grads[0], x, weight, None, None,
                        eval_stats=_eval_stats(same_mean, same_var, eps)), None, None)
    return (*_grads(ctx, grads[0], x, weight, mean, rstd, grads[1], grads[2]), None, None)


def _no_stats_vjp(ctx, grads, x, weight, bias, training, momentum, eps):
    _, mean, rstd = ctx.out
    return _grads(ctx, grads[0], x, weight, mean, rstd, grads[1], grads[2])


def _no_training_vjp(ctx, grads, x, weight, bias, running_mean, running_var, momentum, eps):
    return (*_grads(ctx, grads[0], x, weight, None, None,
                    eval_stats=_eval_stats(running_mean, running_var, eps)), None, None)


# ---- shapes --------------------------------------------------------------------------------

def _check(x):
    if x.ndim < 2:
        raise ValueError(f"Expected 2D or higher input (got {x.ndim}D input)")


def _out_and_stats(x, stat_len):
    return (x.shape, x.dtype), ((stat_len,), x.dtype), ((stat_len,), x.dtype)


def _functional_shape(x, weight, bias, running_mean, running_var, training, momentum, eps):
    _check(x)
    return _out_and_stats(x, x.shape[1] if training else 0) + (
        (running_mean.shape, running_mean.dtype),
        (running_var.shape, running_var.dtype))


def _no_stats_shape(x, weight, bias, training, momentum, eps):
    _check(x)
    return _out_and_stats(x, x.shape[1])


def _no_training_shape(x, weight, bias, running_mean, running_var, momentum, eps):
    _check(x)
    return _out_and_stats(x, 0)


# ---- vmap: the vmap batch joins the channels -----------------------------------------------
# Each example of the vmap batch is normalized over its own (N, *spatial): with the batch B
# moved next to the channels, (N, B*C, *spatial) is one batch norm with B*C channels.

def _merge(x, size):
    """(B, N, C, *S) -> (N, B*C, *S)."""
    n, c = x.shape[1], x.shape[2]
    return x.movedim(0, 1).reshape((n, size * c) + tuple(x.shape[3:]))


def _per_channel(t, bdim, size, c):
    if t is None:
        return None
    if bdim is None:
        return t.repeat(size)
    return _batched_front(t, bdim, size).reshape(size * c)


def _split_out(out, size):
    n, bc = out.shape[0], out.shape[1]
    return out.reshape((n, size, bc // size) + tuple(out.shape[2:])).movedim(1, 0)


def _batch_rule(op, args, bdims, params, batch_size):
    x = _batched_front(args[0], bdims[0], batch_size)
    c = x.shape[2]
    channel_args = [_per_channel(a, b, batch_size, c) if hasattr(a, "shape") else a
                    for a, b in zip(args[1:], bdims[1:])]
    outs = op(_merge(x, batch_size), *channel_args, **params)
    first = _split_out(outs[0], batch_size)
    rest = [o.reshape(batch_size, -1) if o.shape[0] else o for o in outs[1:]]
    return (first, *rest), [0] + [0 if o.shape[0] else None for o in outs[1:]]


def _op(name, kernel, vjp, shape, n_out, saved_inputs, saved_outputs, nondiff):
    return Op(name, kernel, vjp, save_inputs=saved_inputs, save_output=saved_outputs,
              n_out=n_out, nondiff_outputs=nondiff, category="nn", shape=shape,
              batch=_batch_rule, unsupported={"jvp": JVP_FROM_VJP})


# the decompositions are in ember/ops/decompositions/nn.py; the vjps read the statistics
# outputs only, never the normalized output (which an in-place activation may overwrite)


BATCH_NORM_FUNCTIONAL = _op("_native_batch_norm_legit_functional", _functional_kernel,
                            _functional_vjp, _functional_shape, 5, (0, 1),
                            (1, 2, 3, 4), (3, 4))
BATCH_NORM_NO_STATS = _op("_native_batch_norm_legit", _no_stats_kernel, _no_stats_vjp,
                          _no_stats_shape, 3, (0, 1), (1, 2), ())
BATCH_NORM_NO_TRAINING = _op("_native_batch_norm_legit_no_training", _no_training_kernel,
                             _no_training_vjp, _no_training_shape, 3, (0, 1, 3, 4), False,
                             (1, 2))
