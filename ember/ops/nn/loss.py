"""The fused loss primitives: cross_entropy with class indices and nll_loss (one kernel for
log_softmax + gather + weighting + reduction), the fused cross-entropy gradient, and
ctc_loss (the alpha-beta recursion in log space).

cross_entropy's derivative is always the primitive ``_cross_entropy_backward`` (one
kernel, the training hot path), whose own derivative is written in ember ops, so double
backward works and every mode computes the same gradient.  Under vmap the batch folds
into the loss's own batch dimension (unreduced), then each example reduces separately.
"""
import numpy as np

from ..._core import ckernels as _ck
from ..._core.op import Op
from ..._core.tensor import host_tensor
from .._batching import _batched_front, _fallback_rule, _move_to_front
from .._helpers import _F32, _HALF, apply
# registered with the other losses at import, so that decompositions and lowerings install
# on it (functional.binary_cross_entropy imports it lazily)
from .. import loss_kernels  # noqa: F401
from ..creation import arange, ones_like
from ..pointwise import where
from ..softmax import log_softmax, softmax

__all__ = []


# ---- batching: the vmap batch joins the loss's batch -------------------------------------

def _nll_like_rule(op, args, bdims, params, batch_size):
    """cross_entropy / nll_loss per example: fold the vmap batch into the loss's own batch
    dimension, compute unreduced losses, then reduce each example separately."""
    x = _batched_front(args[0], bdims[0], batch_size)
    t = _batched_front(args[1], bdims[1], batch_size)
    if len(args) > 2 and bdims[2] is not None:
        return _per_example_weights(op, x, t, _move_to_front(args[2], bdims[2]), params), 0
    lnd = x.dim() - 1
    if lnd == 1:  # one example of shape (C,): the vmap batch is the loss batch
        xf, tf = x, t
    else:
        xf = x.reshape((-1,) + tuple(x.shape[2:]))
        tf = t.reshape((-1,) + tuple(t.shape[2:]))
    red = params["reduction"]
    per = op(xf, tf, *args[2:], **dict(params, reduction="none"))
    per = per.reshape((batch_size,) + tuple(t.shape[1:]))
    if red == "none":
        return per, 0
    dims = tuple(range(1, per.dim()))
    total = per.sum(dims) if dims else per
    if red == "sum":
        return total, 0
    valid = (t != params["ignore_index"])
    if len(args) > 2 and args[2] is not None:
        w = args[2][t.clamp(min=0)] * valid
    else:
        w = valid.to(per.dtype)
    denom = w.sum(dims) if dims else w
    return total / denom, 0


def _per_example_weights(op, x, t, w, params):
    """The loss with a class-weight vector per example (V, C), in ember ops: the kernel takes
    one weight for the whole batch.  Same formula as `_nll_np`, reduced per example."""
    V = x.shape[0]
    cdim = 2 if x.dim() > 2 else 1
    logp = x if op is NLL_LOSS else log_softmax(x, cdim)
    valid = t != params["ignore_index"]
    tc = where(valid, t, 0)
    picked = logp.gather(cdim, tc.unsqueeze(cdim)).squeeze(cdim)
    w_t = w.gather(1, tc.reshape(V, -1)).reshape(tuple(t.shape)) * valid
    loss = where(valid, -picked * w_t, 0)
    smoothing = params.get("smoothing", 0.0)
    if smoothing:
        wide = w.reshape((V,) + (1,) * (cdim - 1) + (w.shape[1],) + (1,) * (x.dim() - cdim - 1))
        smooth = where(valid, -(logp * wide).sum(cdim), 0)
    red = params["reduction"]
    if red != "none":
        dims = tuple(range(1, t.dim()))
        total = (lambda a: a.sum(dims)) if dims else (lambda a: a)
        loss = total(loss)
        if smoothing:
            smooth = total(smooth)
        if red == "mean":
            den = total(w_t)
            loss = loss / den
            if smoothing:
                smooth = smooth / den
    if smoothing:
        loss = loss * (1 - smoothing) + smooth * (smoothing / x.shape[cdim])
    return loss


def _nll_grad_rule(op, args, bdims, params, batch_size):
    """The fused cross-entropy backward per example (see `_nll_like_rule`)."""
    if len(args) > 3 and bdims[3] is not None:
        return _fallback_rule(op, args, bdims, params, batch_size)
    g = _batched_front(args[0], bdims[0], batch_size)
    x = _batched_front(args[1], bdims[1], batch_size)
    t = _batched_front(args[2], bdims[2], batch_size)
    red = params["reduction"]
    elem_shape = tuple(t.shape)  # (B, N, d...) or (B,) for single examples
    if red != "none":
        if red == "mean":
            valid = (t != params["ignore_index"])
            w = args[3][t.clamp(min=0)] * valid if len(args) > 3 and args[3] is not None \
                else valid.to(x.dtype)
            dims = tuple(range(1, w.dim()))
            g = g / (w.sum(dims) if dims else w)
        g = g.reshape((batch_size,) + (1,) * (len(elem_shape) - 1)).expand(*elem_shape)
    single = x.dim() == 2 and t.dim() == 1
    xf = x if single else x.reshape((-1,) + tuple(x.shape[2:]))
    tf = t if single else t.reshape((-1,) + tuple(t.shape[2:]))
    gf = g if single else g.reshape((-1,) + tuple(g.shape[2:]))
    r = op(gf, xf, tf, *args[3:], **dict(params, reduction="none"))
    return r.reshape(tuple(x.shape)), 0



# ---- nll / cross entropy ---------------------------------------------------------------
def _log_softmax_np(xp, x, axis):
    m = x.max(axis=axis, keepdims=True) if x.size else x
    s = x - m
    s -= xp.log(xp.exp(s).sum(axis=axis, keepdims=True))
    return s


def _nll_np(xp, logp, target, weight, cdim, ignore_index, reduction, smoothing):
    """Forward of nll (and the smoothing term of cross_entropy) on log-probabilities."""
    C = logp.shape[cdim]
    valid = target != ignore_index
    t = xp.where(valid, target, 0)
    bad = (t < 0) | (t >= C)
    if bad.any():
        raise IndexError(f"Target {int(t[bad].ravel()[0])} is out of bounds.")
    picked = xp.take_along_axis(logp, xp.expand_dims(t, cdim), axis=cdim).squeeze(cdim)
    w_t = (weight[t] if weight is not None else xp.ones(t.shape, logp.dtype)) * valid
    # ignored rows are 0 even where their input is NaN (masked, never multiplied by 0)
    nll = xp.where(valid, -picked * w_t, 0)
    smooth = None
    if smoothing:
        lw = logp if weight is None else logp * _bshape(weight, logp.ndim, cdim)
        smooth = xp.where(valid, -lw.sum(axis=cdim), 0)
    return _nll_reduce(xp, nll, smooth, w_t, C, reduction, smoothing, logp.dtype)


def _nll_reduce(xp, nll, smooth, w_t, C, reduction, smoothing, dtype):
    """The loss from each row's weighted nll, smoothing term and target weight."""
    if reduction == "sum":
        out = nll.sum()
    elif reduction == "mean":
        out = nll.sum() / w_t.sum()
    else:
        out = nll
    if smoothing:
        if reduction == "sum":
            smooth = smooth.sum()
        elif reduction == "mean":
            smooth = smooth.sum() / w_t.sum()
        out = (1 - smoothing) * out + smooth * (smoothing / C)
    return xp.asarray(out, dtype=dtype)


def _bshape(w, ndim, cdim):
    return w.reshape((-1,) + (1,) * (ndim - cdim - 1))


def _ce_kernel(xp, x, target, weight=None, *, ignore_index, reduction, smoothing):
    dt = x.dtype
    a = x.astype(_F32) if dt in _HALF else x
    w = weight.astype(a.dtype) if weight is not None and weight.dtype != a.dtype else weight
    cdim = 1 if x.ndim > 1 else 0
    rows = _ck.cross_entropy(a, target, w, ignore_index, smoothing)  # (N, C) in C
    if rows is not None:
        nll, smooth, w_t = rows
        r = _nll_reduce(xp, nll, smooth, w_t, a.shape[1], reduction, smoothing, a.dtype)
    else:
        r = _nll_np(xp, _log_softmax_np(xp, a, cdim), target, w, cdim, ignore_index,
                    reduction, smoothing)
    return r.astype(dt) if dt in _HALF else r


def _nll_kernel(xp, x, target, weight=None, *, ignore_index, reduction):
    cdim = 1 if x.ndim > 1 else 0
    return _nll_np(xp, x, target, weight, cdim, ignore_index, reduction, 0.0)


def _nll_coeff(g, x, target, weight, ignore_index, reduction, smoothing):
    """d loss / d log-probabilities, in ember ops (so double backward works)."""
    cdim = 1 if x.dim() > 1 else 0
    C = x.shape[cdim]
    valid = target != ignore_index
    t = where(valid, target, 0)
    vf = valid.to(x.dtype)
    w_t = weight[t] * vf if weight is not None else vf
    if reduction == "mean":
        den = w_t.sum()
        gl = g / den
    else:
        gl = g
    classes = arange(C, device=x.device).reshape((C,) + (1,) * (x.dim() - cdim - 1))
    onehot = (t.unsqueeze(cdim) == classes).to(x.dtype)
    a = (gl * w_t).unsqueeze(cdim) * onehot * -(1 - smoothing)
    if smoothing:
        s = (gl * vf).unsqueeze(cdim) * (-smoothing / C)
        a = a + (s * weight.reshape(classes.shape) if weight is not None else s)
    return a


def _ce_grad_kernel(xp, g, x, target, weight=None, *, ignore_index, reduction, smoothing):
    """First-order cross_entropy gradient in one kernel (the training hot path)."""
    r = _ck.cross_entropy_grad(g, x, target, weight, ignore_index, reduction, smoothing)
    if r is not None:  # (N, C) float32/float64 in C
        return r
    dt = x.dtype
    a = x.astype(_F32) if dt in _HALF else x
    cdim = 1 if a.ndim > 1 else 0
    C = a.shape[cdim]
    valid = target != ignore_index
    t = xp.where(valid, target, 0)
    w_t = (weight[t].astype(a.dtype) if weight is not None else xp.ones(t.shape, a.dtype)) * valid
    gl = g / w_t.sum() if reduction == "mean" else g
    gl = xp.asarray(gl, dtype=a.dtype)
    p = xp.exp(_log_softmax_np(xp, a, cdim))
    coef = -(1 - smoothing) * gl * w_t
    r = p * xp.expand_dims(-coef, cdim)
    idx = xp.expand_dims(t, cdim)
    xp.put_along_axis(r, idx, xp.take_along_axis(r, idx, cdim) + xp.expand_dims(coef, cdim), cdim)
    if smoothing:
        s = xp.expand_dims(gl * valid, cdim) * (-smoothing / C)
        if weight is not None:
            s = s * _bshape(weight.astype(a.dtype), a.ndim, cdim)
            r += s - p * s.sum(axis=cdim, keepdims=True)
        else:
            r += s - p * (s * C)
    return r.astype(dt) if dt in _HALF else r


def _ce_grad_vjp(ctx, G, g, x, target, weight=None, *, ignore_index, reduction, smoothing):
    """The gradient is ``a - softmax(x) * sum_c(a)`` with ``a`` (`_nll_coeff`) linear in g and
    independent of x: its derivative in g is itself at g = 1, in x a softmax vjp."""
    need = ctx.needs_input_grad
    cdim = 1 if x.dim() > 1 else 0
    params = {"ignore_index": ignore_index, "reduction": reduction, "smoothing": smoothing}
    rest = () if weight is None else (weight,)
    dg = dx = None
    if need[0]:
        unit = CE_GRAD(ones_like(g), x, target, *rest, **params)
        dg = (G * unit).sum(cdim) if g.dim() else (G * unit).sum()
    if need[1]:
        s = _nll_coeff(g, x, target, weight, ignore_index, reduction, smoothing).sum(
            cdim, keepdim=True)
        p = softmax(x, cdim)
        u = G * s
        dx = p * ((p * u).sum(cdim, keepdim=True) - u)
    return dg, dx, None, None


CE_GRAD = Op("_cross_entropy_backward", _ce_grad_kernel, _ce_grad_vjp, category="nn",
             shape=lambda g, x, target, weight=None, **p: (x.shape, x.dtype),
             batch=_nll_grad_rule)


def _ce_vjp(ctx, g, x, target, weight=None, *, ignore_index, reduction, smoothing):
    args = (g, x, target) if weight is None else (g, x, target, weight)
    return apply(CE_GRAD, args, {"ignore_index": ignore_index, "reduction": reduction,
                                 "smoothing": smoothing}), None, None


def _nll_vjp(ctx, g, x, target, weight=None, *, ignore_index, reduction):
    return _nll_coeff(g, x, target, weight, ignore_index, reduction, 0.0), None, None


def _loss_shape(x, target, weight=None, *, reduction, **p):
    return (target.shape if reduction == "none" else ()), x.dtype


CROSS_ENTROPY = Op("cross_entropy_loss", _ce_kernel, _ce_vjp, shape=_loss_shape, category="nn",
                   batch=_nll_like_rule)
NLL_LOSS = Op("nll_loss", _nll_kernel, _nll_vjp, shape=_loss_shape, category="nn",
              batch=_nll_like_rule)



# ---- CTC ---------------------------------------------------------------------------------
def _lse(*xs):
    m = xs[0]
    for x in xs[1:]:
        m = np.maximum(m, x)
    ms = np.where(np.isfinite(m), m, 0)
    s = sum(np.exp(x - ms) for x in xs)
    return np.log(s) + ms


def _ctc_setup(lp, targets, in_lens, tgt_lens, blank):
    """Extended labels l' (blank-interleaved, padded with blank) and their validity masks."""
    T, N, C = lp.shape
    L = max(tgt_lens) if tgt_lens else 0
    S = 2 * L + 1
    ext = np.full((N, S), blank, dtype=np.int64)
    off = 0
    for n, tl in enumerate(tgt_lens):
        tg = targets[n, :tl] if targets.ndim == 2 else targets[off:off + tl]
        off += tl
        ext[n, 1:2 * tl:2] = tg
    bad = (ext < 0) | (ext >= C)
    if bad.any():
        # torch's CPU kernel reads out of bounds here (garbage, NaN or inf): refused instead
        n, s = np.argwhere(bad)[0]
        raise IndexError(f"ctc_loss: target {int(ext[n, s])} of batch element {n} is out of "
                         f"the class range [0, {C})")
    s_idx = np.arange(S)
    valid = s_idx[None, :] < (2 * np.asarray(tgt_lens)[:, None] + 1)
    # the s-2 transition is allowed into a label that differs from the label two back
    skip = np.zeros((N, S), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    lpe = np.take_along_axis(lp, np.broadcast_to(ext[None], (T, N, S)), axis=2)
    return ext, valid, skip, lpe


def _ctc_alpha(lpe, valid, skip, in_lens):
    T, N, S = lpe.shape
    ninf = -np.inf
    alpha = np.full((T, N, S), ninf, dtype=lpe.dtype)
    a = np.full((N, S), ninf, dtype=lpe.dtype)
    a[:, 0] = lpe[0, :, 0]
    if S > 1:
        a[:, 1] = lpe[0, :, 1]
    a = np.where(valid, a, ninf)
    in_lens = np.asarray(in_lens)
    a = np.where((in_lens > 0)[:, None], a, ninf)
    alpha[0] = a
    for t in range(1, T):
        prev1 = np.concatenate([np.full((N, 1), ninf, a.dtype), a[:, :-1]], 1)
        prev2 = np.concatenate([np.full((N, 2), ninf, a.dtype), a[:, :-2]], 1)[:, :S]
        prev2 = np.where(skip, prev2, ninf)
        new = np.where(valid, lpe[t] + _lse(a, prev1, prev2), ninf)
        a = np.where((t < in_lens)[:, None], new, a)
        alpha[t] = new
    return alpha, a


def _ctc_nll(final_alpha, tgt_lens):
    N = final_alpha.shape[0]
    last = 2 * np.asarray(tgt_lens, dtype=np.int64)
    a1 = final_alpha[np.arange(N), last]
    a2 = np.where(last > 0, final_alpha[np.arange(N), np.maximum(last - 1, 0)], -np.inf)
    return -_lse(a1, a2)


def _ctc_prepare(lp, targets, in_lens, tgt_lens, blank):
    dt = lp.dtype
    a = lp.astype(_F32) if dt in _HALF else lp
    return a, _ctc_setup(a, targets, in_lens, tgt_lens, blank)


def _ctc_kernel(xp, lp, targets, *, in_lens, tgt_lens, blank, zero_inf):
    a, (ext, valid, skip, lpe) = _ctc_prepare(lp, targets, in_lens, tgt_lens, blank)
    _, final = _ctc_alpha(lpe, valid, skip, in_lens)
    nll = _ctc_nll(final, tgt_lens)
    if zero_inf:
        nll = xp.where(xp.isinf(nll), 0, nll)
    return nll.astype(lp.dtype)


def _ctc_grad_kernel(xp, lp, targets, *, in_lens, tgt_lens, blank, zero_inf):
    """torch's CTC gradient w.r.t. log_probs for a unit upstream gradient:
    exp(lp) - posterior occupancy (zero past each input length)."""
    a, (ext, valid, skip, lpe) = _ctc_prepare(lp, targets, in_lens, tgt_lens, blank)
    T, N, S = lpe.shape
    alpha, final = _ctc_alpha(lpe, valid, skip, in_lens)
    nll = _ctc_nll(final, tgt_lens)
    ninf = -np.inf
    beta = xp.full((T, N, S), ninf, dtype=a.dtype)
    b = xp.full((N, S), ninf, dtype=a.dtype)
    in_arr = xp.asarray(in_lens)
    last = 2 * xp.asarray(tgt_lens, dtype=np.int64)
    ar = xp.arange(N)
    skip_next = xp.zeros((N, S), dtype=bool)
    skip_next[:, :-2] = skip[:, 2:]
    for t in range(T - 1, -1, -1):
        nxt1 = xp.concatenate([b[:, 1:], xp.full((N, 1), ninf, b.dtype)], 1)
        nxt2 = xp.concatenate([b[:, 2:], xp.full((N, 2), ninf, b.dtype)], 1)[:, :S]
        nxt2 = xp.where(skip_next, nxt2, ninf)
        rec = xp.where(valid, lpe[t] + _lse(b, nxt1, nxt2), ninf)
        init = xp.full((N, S), ninf, dtype=a.dtype)
        init[ar, last] = lpe[t, ar, last]
        has2 = last > 0
        init[ar[has2], last[has2] - 1] = lpe[t, ar[has2], last[has2] - 1]
        b = xp.where((t == in_arr - 1)[:, None], init, xp.where((t < in_arr - 1)[:, None], rec,
                                                                 ninf))
        beta[t] = b
    occ = xp.exp(alpha + beta + nll[None, :, None] - lpe)
    occ = xp.where(xp.isfinite(occ), occ, 0)
    onehot = (ext[:, :, None] == xp.arange(a.shape[2])[None, None, :]).astype(a.dtype)
    gamma = xp.einsum("tns,nsc->tnc", occ, onehot)
    grad = xp.exp(a) - gamma
    # an impossible alignment (infinite loss) has an undefined gradient: nan, like torch
    grad = xp.where(xp.isinf(nll)[None, :, None], np.nan, grad)
    tmask = xp.arange(T)[:, None] < in_arr[None, :]
    grad = xp.where(tmask[:, :, None], grad, 0)
    if zero_inf:
        grad = xp.where(xp.isinf(nll)[None, :, None], 0, grad)
    return grad.astype(lp.dtype)


def _ctc_grad_vjp(ctx, g, lp, targets, **p):
    raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")


# differentiable so that its output records a node: a second derivative of ctc_loss must
# raise, as torch's does, rather than treat the gradient as a constant
CTC_GRAD = Op("_ctc_loss_backward", _ctc_grad_kernel, _ctc_grad_vjp, category="nn",
              shape=lambda lp, targets, **p: (lp.shape, lp.dtype),
              unsupported={"jvp": "torch implements no derivative of _ctc_loss_backward"})


def _ctc_vjp(ctx, g, lp, targets, **p):
    return apply(CTC_GRAD, (lp, targets), p) * g.unsqueeze(-1), None


def _ctc_batch(op, args, bdims, params, batch_size):
    """The vmap batch joins the op's batch N: log_probs (T, V*N, C), targets (V*N, S) or,
    concatenated, (V*sum,), the length lists repeated V times."""
    V = batch_size
    lp, targets = (_batched_front(a, b, V) for a, b in zip(args, bdims))
    T, N, C = lp.shape[1:]
    lp = lp.movedim(0, 1).reshape(T, V * N, C)
    targets = targets.reshape((V * targets.shape[1],) + tuple(targets.shape[2:]))
    p = dict(params, in_lens=tuple(params["in_lens"]) * V,
             tgt_lens=tuple(params["tgt_lens"]) * V)
    out = op(lp, targets, **p)
    if op is CTC_GRAD:
        return out.reshape(T, V, N, C), 1
    return out.reshape(V, N), 0


CTC_GRAD.batch = _ctc_batch
CTC_LOSS = Op("_ctc_loss", _ctc_kernel, _ctc_vjp, category="nn", batch=_ctc_batch,
              shape=lambda lp, targets, **p: ((lp.shape[1],), lp.dtype))  # lp: (T, N, C)


def ctc_check(T, N, C, targets_shape, in_lens, tgt_lens, blank):
    """torch's argument checks of ctc_loss, on host lengths."""
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    if len(in_lens) != N:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(in_lens)} "
                           f"and batch_size {N}")
    if len(tgt_lens) != N:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got "
                           f"{len(tgt_lens)} and batch_size {N}")
    for il in in_lens:
        if il > T or il < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got "
                               f"value {il} (while checking arguments for ctc_loss_cpu)")
    for tl in tgt_lens:
        if tl < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got "
                               f"value {tl} (while checking arguments for ctc_loss_cpu)")
    # concatenated targets hold exactly the sum of the lengths, padded ones a row per sequence
    want = sum(tgt_lens) if len(targets_shape) == 1 else N
    if targets_shape and targets_shape[0] != want:
        raise RuntimeError(f"Expected tensor to have size {want} at dimension 0, but got size "
                           f"{targets_shape[0]} for argument #2 'targets' (while checking "
                           f"arguments for ctc_loss_cpu)")
    if len(targets_shape) == 2 and max(tgt_lens, default=0) > targets_shape[1]:
        raise RuntimeError(f"Expected tensor to have size at least {max(tgt_lens)} at "
                           f"dimension 1, but got size {targets_shape[1]} for argument #2 "
                           f"'targets' (while checking arguments for ctc_loss_cpu)")


# ---- ctc_loss with the lengths as tensors: what vmap over batched lengths reaches ----------
# The lengths steer host loops, so they are parameters of _ctc_loss; under vmap per-example
# lengths are only known to the batching rule, which reads them from the physical batch and
# calls _ctc_loss with all V*N sequences in its batch.

def _host_ints(a):
    return tuple(int(v) for v in a.reshape(-1).tolist())


def _ctc_tensor_kernel(kernel):
    def run(xp, lp, targets, in_lens, tgt_lens, *, blank, zero_inf):
        il, tl = _host_ints(in_lens), _host_ints(tgt_lens)
        ctc_check(*lp.shape, targets.shape, il, tl, blank)
        return kernel(xp, lp, targets, in_lens=il, tgt_lens=tl, blank=blank, zero_inf=zero_inf)
    return run


def _ctc_tensor_vjp(ctx, g, lp, targets, in_lens, tgt_lens, **p):
    return apply(CTC_GRAD_TENSOR, (lp, targets, in_lens, tgt_lens), p) * g.unsqueeze(-1), \
        None, None, None


def _ctc_tensor_batch(op, args, bdims, params, batch_size):
    V = batch_size
    lp, targets, il, tl = (_batched_front(a, b, V) for a, b in zip(args, bdims))
    T, N, C = lp.shape[1:]
    in_lens, tgt_lens = _host_ints(il), _host_ints(tl)
    if len(in_lens) != V * N or len(tgt_lens) != V * N:
        raise RuntimeError(f"input_lengths and target_lengths must be of size batch_size {N}, "
                           f"but got {il.shape[1:]} and {tl.shape[1:]}")
    for v in range(V):
        ctc_check(T, N, C, tuple(targets.shape[1:]), in_lens[v * N:(v + 1) * N],
                  tgt_lens[v * N:(v + 1) * N], params["blank"])
    lp = lp.movedim(0, 1).reshape(T, V * N, C)
    if targets.dim() == 3:
        targets = targets.reshape(V * N, targets.shape[2])
    else:
        # concatenated targets: each example's offsets start afresh, so gather them into
        # padded rows (V*N, max length)
        S = targets.shape[1]
        lens = np.asarray(tgt_lens, dtype=np.int64).reshape(V, N)
        L = max(int(lens.max(initial=0)), 1)
        starts = np.cumsum(lens, axis=1) - lens + (np.arange(V) * S)[:, None]
        idx = np.minimum(starts[:, :, None] + np.arange(L), V * S - 1).reshape(V * N, L)
        targets = targets.reshape(-1)[host_tensor(idx, targets)]
    p = dict(params, in_lens=in_lens, tgt_lens=tgt_lens)
    if op is CTC_GRAD_TENSOR:
        return CTC_GRAD(lp, targets, **p).reshape(T, V, N, C), 1
    return CTC_LOSS(lp, targets, **p).reshape(V, N), 0


_TENSOR_ONLY = "lengths as tensor data are what vmap reaches: its batching rule lowers the " \
               "op to _ctc_loss (with host lengths), which has this rule"
CTC_GRAD_TENSOR = Op("_ctc_loss_tensor_backward", _ctc_tensor_kernel(_ctc_grad_kernel),
                     _ctc_grad_vjp, category="nn", batch=_ctc_tensor_batch,
                     shape=lambda lp, targets, il, tl, **p: (lp.shape, lp.dtype),
                     unsupported={"jvp": "torch implements no derivative of "
                                         "_ctc_loss_backward",
                                  "decomp": _TENSOR_ONLY, "lowering": _TENSOR_ONLY})
CTC_LOSS_TENSOR = Op("_ctc_loss_tensor", _ctc_tensor_kernel(_ctc_kernel), _ctc_tensor_vjp,
                     category="nn", batch=_ctc_tensor_batch,
                     shape=lambda lp, targets, il, tl, **p: ((lp.shape[1],), lp.dtype),
                     unsupported={"decomp": _TENSOR_ONLY, "lowering": _TENSOR_ONLY})


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP,
                 "cross_entropy_loss", "nll_loss", "_cross_entropy_backward", "_ctc_loss",
                 "_ctc_loss_tensor")
