"""nn operators in primitives: activations, linear, embedding, normalization, losses.

Their eager kernels are fused (and partly C); these formulas are what a compiler fuses
instead.  Halves are computed in float32 and rounded once, as the kernels do.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from . import decomposes
from ._util import cast, full, iota, numel, prim, reshape, squeeze, unsqueeze

_HALVES = ("float16", "bfloat16")
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _work(x):
    if x.dtype.name in _HALVES:
        return cast(x, _dt.float32), x.dtype
    return x, None


def _back(r, dt):
    return r if dt is None else cast(r, dt)


def _activation(fn):
    """Wrap ``fn(x, **params)`` with the kernels' half handling and output dtype."""
    def decomp(x, **p):
        w, back = _work(x)
        r = fn(w, **p)
        return cast(r, x.dtype) if back is None else _back(r, back)
    return decomp


def _softplus_formula(z):
    # log(1 + exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))
    return prim.add(prim.maximum(z, 0), prim.log1p(prim.exp(prim.neg(prim.abs(z)))))


def _relu(x):
    return prim.maximum(x, 0)


def _gelu(x, tanh):
    if tanh:
        inner = prim.mul(prim.add(x, prim.mul(prim.mul(prim.mul(x, x), x), 0.044715)),
                         _SQRT_2_OVER_PI)
        return prim.mul(prim.mul(x, 0.5), prim.add(prim.tanh(inner), 1))
    return prim.mul(prim.mul(x, 0.5), prim.add(prim.erf(prim.mul(x, 1 / math.sqrt(2.0))), 1))


def _silu(x):
    return prim.mul(x, prim.sigmoid(x))


def _softplus(x, beta, threshold):
    z = prim.mul(x, beta)
    return prim.where(prim.gt(z, threshold), x, prim.div(_softplus_formula(z), beta))


def _mish(x):
    return prim.mul(x, prim.tanh(_softplus_formula(x)))


def _elu(x, alpha, scale, iscale, iscale_grad=None):
    neg = prim.mul(prim.expm1(prim.mul(x, iscale)), alpha * scale)
    return prim.where(prim.le(x, 0), neg, prim.mul(x, scale))


def _leaky_relu(x, slope):
    return prim.where(prim.gt(x, 0), x, prim.mul(x, slope))


def _hardtanh(x, lo, hi):
    return prim.minimum(prim.maximum(x, lo), hi)


def _hardsigmoid(x):
    return prim.minimum(prim.maximum(prim.add(prim.div(x, 6), 0.5), 0), 1)


def _hardswish(x):
    return prim.div(prim.mul(x, prim.minimum(prim.maximum(prim.add(x, 3), 0), 6)), 6)


def _log_sigmoid(x):
    return prim.neg(_softplus_formula(prim.neg(x)))


def _threshold(x, th, value):
    return prim.where(prim.le(x, th), value, x)


def _softshrink(x, lambd):
    shrunk = prim.sub(x, prim.mul(prim.sign(x), lambd))
    return prim.where(prim.le(prim.abs(x), lambd), 0, shrunk)


def _hardshrink(x, lambd):
    inside = prim.logical_and(prim.ge(x, -lambd), prim.le(x, lambd))
    return prim.where(inside, 0, x)


for _name, _fn in (("relu", _relu), ("gelu", _gelu), ("silu", _silu), ("softplus", _softplus),
                   ("mish", _mish), ("elu", _elu), ("leaky_relu", _leaky_relu),
                   ("hardtanh", _hardtanh), ("hardsigmoid", _hardsigmoid),
                   ("hardswish", _hardswish), ("log_sigmoid", _log_sigmoid),
                   ("threshold", _threshold), ("softshrink", _softshrink),
                   ("hardshrink", _hardshrink)):
    decomposes(_name)(_activation(_fn))


@decomposes("threshold_backward")
def _threshold_backward(g, mask):
    # a where, not g * mask: an infinite gradient under a closed mask gives 0, not NaN
    return prim.where(mask, g, 0)


@decomposes("gelu_backward")
def _gelu_backward(g, x, tanh):
    gw, back = _work(g)
    w, _ = _work(x)
    if tanh:
        x2 = prim.mul(w, w)
        t = prim.tanh(prim.mul(prim.add(w, prim.mul(prim.mul(x2, w), 0.044715)), _SQRT_2_OVER_PI))
        d = prim.add(prim.mul(prim.add(t, 1), 0.5),
                     prim.mul(prim.mul(prim.mul(w, 0.5 * _SQRT_2_OVER_PI),
                                       prim.sub(1, prim.mul(t, t))),
                              prim.add(prim.mul(x2, 0.134145), 1)))
    else:
        cdf = prim.mul(prim.add(prim.erf(prim.mul(w, 1 / math.sqrt(2.0))), 1), 0.5)
        pdf = prim.mul(prim.exp(prim.mul(prim.mul(w, w), -0.5)), 1 / math.sqrt(2 * math.pi))
        d = prim.add(cdf, prim.mul(w, pdf))
    return _back_to(prim.mul(gw, d), x.dtype, back)


@decomposes("silu_backward")
def _silu_backward(g, x):
    gw, back = _work(g)
    w, _ = _work(x)
    s = prim.sigmoid(w)
    d = prim.mul(s, prim.add(prim.mul(w, prim.sub(1, s)), 1))
    return _back_to(prim.mul(gw, d), x.dtype, back)


@decomposes("leaky_relu_backward")
def _leaky_relu_backward(g, x, slope):
    gw, back = _work(g)
    return _back_to(prim.where(prim.gt(x, 0), gw, prim.mul(gw, slope)), x.dtype, back)


def _back_to(r, dtype, back):
    return cast(r, back if back is not None else dtype)


# ---- linear / embedding ----------------------------------------------------------------------
@decomposes("linear")
def _linear(x, w, b=None):
    xw, back = _work(x)
    ww, _ = _work(w)
    if w.ndim == 1:
        y = prim.matmul(xw, ww)
    else:
        y = prim.matmul(xw, prim.permute(ww, dims=(1, 0)))
    if b is not None:
        y = prim.add(y, _work(b)[0])
    return _back(y, back)


@decomposes("embedding")
def _embedding(w, idx, *, padding_idx, scale_freq):
    out = prim.index(w, idx)
    if padding_idx < 0 and not scale_freq:
        return out
    # the padding row gets no gradient and scale_grad_by_freq divides each row's gradient
    # by its count: stop_gradient keeps the value and reshapes only the derivative
    frozen = prim._stop_gradient(out)
    if scale_freq:
        flat = reshape(idx, (numel(idx.shape),))
        counts = prim.index(prim.bincount(flat, None, minlength=w.shape[0]), idx)
        scale = unsqueeze(prim.div(1.0, cast(counts, out.dtype)), -1)
        out = prim.add(frozen, prim.mul(prim.sub(out, frozen), scale))
    if padding_idx >= 0:
        out = prim.where(unsqueeze(prim.eq(idx, padding_idx), -1), frozen, out)
    return out


@decomposes("one_hot")
def _one_hot(x, num_classes):
    if num_classes == -1:
        # the class count is read from the data: the one place this output shape is not static
        num_classes = int(prim.amax(x, dims=tuple(range(x.ndim)), keepdim=False).item()) + 1
    return cast(prim.eq(unsqueeze(x, -1), iota(num_classes)), np.int64)


# ---- normalization -----------------------------------------------------------------------------
def _mean(x, dims):
    return prim.div(prim.sum(x, dims=dims, keepdim=True), numel([x.shape[d] for d in dims]))


@decomposes("_normalize")
def _normalize(x, dims, eps):
    w, back = _work(x)
    dims = tuple(d % x.ndim for d in dims)
    mean = _mean(w, dims)
    xc = prim.sub(w, mean)
    var = _mean(prim.mul(xc, xc), dims)
    rstd = prim.div(1.0, prim.sqrt(prim.add(var, eps)))
    return _back(prim.mul(xc, rstd), back), _back(mean, back), _back(rstd, back)


@decomposes("native_layer_norm")
def _native_layer_norm(x, weight, bias, normalized_shape, eps):
    # the composite layer_norm spells: normalize, then addcmul's bias + xhat * weight
    xhat, mean, rstd = _normalize(x, tuple(range(x.ndim - len(normalized_shape), x.ndim)), eps)
    return prim.add(bias, prim.mul(xhat, weight)), mean, rstd


@decomposes("_normalize_backward")
def _normalize_backward(gxh, gm, gr, xhat, rstd, dims, n):
    g, back = _work(gxh)
    xh = _work(xhat)[0]
    r = _work(rstd)[0]
    dims = tuple(d % xhat.ndim for d in dims)
    gx = prim.sub(g, _mean(g, dims))
    gx = prim.sub(gx, prim.mul(xh, _mean(prim.mul(g, xh), dims)))
    gx = prim.mul(gx, r)
    if gm is not None:
        gx = prim.add(gx, prim.div(_work(gm)[0], n))
    if gr is not None:
        gx = prim.sub(gx, prim.mul(xh, prim.div(prim.mul(prim.mul(_work(gr)[0], r), r), n)))
    return _back(gx, back)


# ---- losses -----------------------------------------------------------------------------------
def _log_softmax(x, dim):
    # x - max unguarded, as torch's kernels: a row with +inf (inf - inf) or only -inf
    # gives NaN everywhere, not logsumexp's finite-max guard's `nan, -inf, ...`
    s = prim.sub(x, prim.amax(x, dims=(dim,), keepdim=True))
    return prim.sub(s, prim.log(prim.sum(prim.exp(s), dims=(dim,), keepdim=True)))


def _nll(logp, target, weight, cdim, ignore_index, reduction, smoothing):
    C = logp.shape[cdim]
    if weight is not None:
        weight = prim._stop_gradient(weight)  # torch differentiates the input only
    valid = prim.ne(target, ignore_index)
    t = prim.where(valid, target, 0)
    picked = squeeze(prim.gather(logp, unsqueeze(t, cdim), dim=cdim), cdim)
    w_t = prim.index(weight, t) if weight is not None else full(t.shape, 1, logp.dtype)
    w_t = prim.mul(w_t, cast(valid, logp.dtype))
    nll = prim.where(valid, prim.neg(prim.mul(picked, w_t)), 0)
    all_dims = tuple(range(nll.ndim))
    total_w = prim.sum(w_t, dims=all_dims, keepdim=False)
    if reduction == "sum":
        out = prim.sum(nll, dims=all_dims, keepdim=False)
    elif reduction == "mean":
        out = prim.div(prim.sum(nll, dims=all_dims, keepdim=False), total_w)
    else:
        out = nll
    if smoothing:
        lw = logp if weight is None else prim.mul(
            logp, reshape(weight, (C,) + (1,) * (logp.ndim - cdim - 1)))
        smooth = prim.where(valid, prim.neg(prim.sum(lw, dims=(cdim,), keepdim=False)), 0)
        if reduction == "sum":
            smooth = prim.sum(smooth, dims=all_dims, keepdim=False)
        elif reduction == "mean":
            smooth = prim.div(prim.sum(smooth, dims=all_dims, keepdim=False), total_w)
        out = prim.add(prim.mul(out, 1 - smoothing), prim.mul(smooth, smoothing / C))
    return cast(out, logp.dtype)


@decomposes("cross_entropy_loss")
def _cross_entropy(x, target, weight=None, *, ignore_index, reduction, smoothing):
    a, back = _work(x)
    w = cast(weight, a.dtype) if weight is not None else None
    cdim = 1 if x.ndim > 1 else 0
    r = _nll(_log_softmax(a, cdim), target, w, cdim, ignore_index, reduction, smoothing)
    return _back(r, back)


@decomposes("nll_loss")
def _nll_loss(x, target, weight=None, *, ignore_index, reduction):
    cdim = 1 if x.ndim > 1 else 0
    return _nll(x, target, weight, cdim, ignore_index, reduction, 0.0)


@decomposes("_cross_entropy_backward")
def _cross_entropy_backward(g, x, target, weight=None, *, ignore_index, reduction, smoothing):
    a, back = _work(x)
    cdim = 1 if x.ndim > 1 else 0
    C = x.shape[cdim]
    if weight is not None:
        weight = prim._stop_gradient(weight)  # as in the forward: no derivative in weight
    valid = prim.ne(target, ignore_index)
    t = prim.where(valid, target, 0)
    vf = cast(valid, a.dtype)
    w_t = prim.mul(cast(prim.index(weight, t), a.dtype), vf) if weight is not None else vf
    gw = cast(g, a.dtype)
    gl = prim.div(gw, prim.sum(w_t, dims=tuple(range(w_t.ndim)), keepdim=False)) \
        if reduction == "mean" else gw
    p = prim.exp(_log_softmax(a, cdim))
    coef = prim.mul(prim.mul(gl, w_t), -(1 - smoothing))
    classes = reshape(iota(C), (C,) + (1,) * (x.ndim - cdim - 1))
    onehot = cast(prim.eq(unsqueeze(t, cdim), classes), a.dtype)
    c = unsqueeze(coef, cdim)
    r = prim.add(prim.mul(p, prim.neg(c)), prim.mul(onehot, c))
    if smoothing:
        s = prim.mul(unsqueeze(prim.mul(gl, vf), cdim), -smoothing / C)
        if weight is not None:
            s = prim.mul(s, reshape(cast(weight, a.dtype), (C,) + (1,) * (x.ndim - cdim - 1)))
            r = prim.add(r, prim.sub(s, prim.mul(p, prim.sum(s, dims=(cdim,), keepdim=True))))
        else:
            r = prim.add(r, prim.sub(s, prim.mul(p, prim.mul(s, C))))
    return _back(r, back)


@decomposes("mse_loss")
def _mse_loss(x, y, reduction="none"):
    d = prim.sub(x, y)
    s = prim.mul(d, d)
    if reduction == "none":
        return s
    if reduction == "mean":
        from .reduction import _mean
        return _mean(s, None, False)
    return prim.sum(s, dims=tuple(range(s.ndim)), keepdim=False)


@decomposes("binary_cross_entropy")
def _binary_cross_entropy(x, y):
    log_p = prim.maximum(prim.log(x), -100)
    log_q = prim.maximum(prim.log1p(prim.neg(x)), -100)
    r = prim.neg(prim.add(prim.mul(y, log_p), prim.mul(prim.sub(1, y), log_q)))
    return cast(r, x.dtype)


# ---- softmax ------------------------------------------------------------------------------------
def _softmax_dtype(x, dtype):
    if dtype is not None:
        x = cast(x, dtype)
    return _work(x)


@decomposes("softmax")
def _softmax(x, dim, dtype=None):
    w, back = _softmax_dtype(x, dtype)
    if w.ndim == 0:
        return _back(prim.exp(prim.sub(w, w)), back)
    return _back(prim.exp(_log_softmax(w, dim)), back)


@decomposes("log_softmax")
def _log_softmax_op(x, dim, dtype=None):
    w, back = _softmax_dtype(x, dtype)
    if w.ndim == 0:
        return _back(prim.sub(w, w), back)
    return _back(_log_softmax(w, dim), back)



# ---- batch norm (ember.ops.nn.batch_norm) ---------------------------------------------------
def _bn_running(running, stat, momentum):
    return prim.add(prim.mul(running, 1 - momentum), prim.mul(cast(stat, running.dtype), momentum))


def _bn_train(x, weight, bias, running_mean, running_var, momentum, eps):
    c, nd = x.shape[1], x.ndim
    dims = (0,) + tuple(range(2, nd))
    w, back = _work(x)
    xhat, mean, rstd = _normalize(w, dims, eps)
    shape = (1, c) + (1,) * (nd - 2)
    out = xhat
    if weight is not None:
        out = prim.mul(out, reshape(_work(weight)[0], shape))
    if bias is not None:
        out = prim.add(out, reshape(_work(bias)[0], shape))
    mean, rstd = reshape(mean, (c,)), reshape(rstd, (c,))
    stats = []
    if running_mean is not None:
        stats.append(_bn_running(running_mean, mean, momentum))
    if running_var is not None:
        n = numel([x.shape[d] for d in dims])
        r = cast(rstd, _dt.float64)   # the unbiased variance, from the statistics kept
        var = prim.mul(prim.sub(prim.div(1.0, prim.mul(r, r)), eps), n / (n - 1))
        stats.append(_bn_running(running_var, var, momentum))
    return (_back(out, back), _back(mean, back), _back(rstd, back), *stats)


def _bn_eval(x, weight, bias, running_mean, running_var, eps):
    # the running statistics are not differentiable (torch refuses them requiring grad)
    running_mean, running_var = prim._stop_gradient(running_mean), prim._stop_gradient(running_var)
    w, back = _work(x)
    shape = (x.shape[1],) + (1,) * (x.ndim - 2)
    scale = cast(prim.div(1.0, prim.sqrt(prim.add(_work(running_var)[0], eps))), w.dtype)
    if weight is not None:
        scale = prim.mul(scale, _work(weight)[0])
    shift = prim.mul(prim.neg(cast(_work(running_mean)[0], w.dtype)), scale)
    if bias is not None:
        shift = prim.add(shift, _work(bias)[0])
    return _back(prim.add(reshape(shift, shape), prim.mul(w, reshape(scale, shape))), back)


@decomposes("_native_batch_norm_legit_functional")
def _native_batch_norm_legit_functional(x, weight, bias, running_mean, running_var, training,
                                        momentum, eps):
    if training:
        return _bn_train(x, weight, bias, running_mean, running_var, momentum, eps)
    empty = full((0,), 0.0, x.dtype)
    return (_bn_eval(x, weight, bias, running_mean, running_var, eps), empty, empty,
            prim.mul(running_mean, 1), prim.mul(running_var, 1))


@decomposes("_native_batch_norm_legit")
def _native_batch_norm_legit(x, weight, bias, training, momentum, eps):
    return _bn_train(x, weight, bias, None, None, momentum, eps)


@decomposes("_native_batch_norm_legit_no_training")
def _native_batch_norm_legit_no_training(x, weight, bias, running_mean, running_var, momentum,
                                         eps):
    empty = full((0,), 0.0, x.dtype)
    return _bn_eval(x, weight, bias, running_mean, running_var, eps), empty, empty
