"""``_flash_attention``: softmax(q k^T * scale + mask) v as one primitive.

The kernel works FlashAttention style: query rows in blocks, key/value columns in
blocks, keeping a running row maximum, row sum and output accumulator, so the extra
memory is O(L * block) rather than the L x S score matrix.  It also returns the row
log-sum-exp.  Its derivative is one fused operator, ``_flash_attention_backward``, which
recomputes each score block from that log-sum-exp (FlashAttention-2: dq, dk, dv block by
block, O(L * d) memory) and whose own derivative is written in ember ops (double
backward, forward AD).  Both kernels run the compiled C of `ember._core.ckernels.attention`
on float arrays when a C compiler is available, else the blocked NumPy below; the two
compute the same thing.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from ..._core import meta as _meta
from ..._core.ckernels import attention as _ck
from ..._core.op import Op
from ..._core.tensor import Tensor, host_tensor
from .. import _helpers as H
from .._batching import _front_padded
from ..creation import zeros_like
from ._rules import front_all, outs_at_front

__all__ = []

# one block when batch * L * S is at most this many scores; otherwise these block sizes
SINGLE_BLOCK_SCORES = 1 << 22
BLOCK_Q = 512
BLOCK_K = 1024
BLOCK_K_BACKWARD = 256


def _mask_block(mask, i0, i1, j0, j1):
    """mask[..., i0:i1, j0:j1] where a broadcast (size-1) dim is kept whole."""
    ri = slice(i0, i1) if mask.shape[-2] != 1 else slice(None)
    rj = slice(j0, j1) if mask.shape[-1] != 1 else slice(None)
    return mask[..., ri, rj]


def _blocks(L, S, batch):
    if batch * L * S <= SINGLE_BLOCK_SCORES:
        return max(L, 1), max(S, 1)
    return BLOCK_Q, BLOCK_K


def _causal_block(i0, i1, j0, j1):
    """True where key j is after query i (masked out), for the block's rows and columns."""
    return np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]


def _causal_add(i0, i1, j0, j1, dtype):
    """Additive causal mask (-inf where key j is after query i): cheaper than a boolean
    scatter into the score block."""
    return np.where(_causal_block(i0, i1, j0, j1), -np.inf, 0).astype(dtype)


def _flash_kernel(xp, q, k, v, mask, scale, causal):
    dt = q.dtype
    if dt in H._HALF:
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
        if mask is not None and mask.dtype != np.bool_:
            mask = mask.astype(np.float32)
    cdt = q.dtype
    if xp is np:
        res = _ck.forward(q, k, v, mask, scale, causal)
        if res is not None:
            return res[0].astype(dt, copy=False), res[1]
    L, S, Ev = q.shape[-2], k.shape[-2], v.shape[-1]
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]]
    if mask is not None:
        shapes.append(mask.shape[:-2])
    batch = np.broadcast_shapes(*shapes)
    out = xp.zeros(batch + (L, Ev), dtype=cdt)
    lse = xp.full(batch + (L,), np.inf, dtype=cdt)
    if L == 0 or S == 0:
        return out.astype(dt, copy=False), lse
    bq, bk = _blocks(L, S, int(np.prod(batch)))
    kT = xp.swapaxes(k, -1, -2)
    bool_mask = mask is not None and mask.dtype == np.bool_
    for i0 in range(0, L, bq):
        i1 = min(L, i0 + bq)
        qb = q[..., i0:i1, :] * xp.asarray(scale, dtype=cdt)
        kend = min(S, i1) if causal else S
        m = lsum = acc = None
        for j0 in range(0, kend, bk):
            j1 = min(kend, j0 + bk)
            s = xp.matmul(qb, kT[..., j0:j1])
            if mask is not None:
                mb = _mask_block(mask, i0, i1, j0, j1)
                if bool_mask:
                    s = xp.where(mb, s, -np.inf)
                else:
                    s = s + mb
            if causal and j1 - 1 > i0:
                s += xp.asarray(_causal_add(i0, i1, j0, j1, cdt))
            mb_ = s.max(-1, keepdims=True)
            m_new = mb_ if m is None else xp.maximum(m, mb_)
            m_safe = xp.where(m_new == -np.inf, 0, m_new)
            s -= m_safe
            xp.exp(s, out=s)
            pv = xp.matmul(s, v[..., j0:j1, :])
            if m is None:
                lsum, acc = s.sum(-1, keepdims=True), pv
            else:
                alpha = xp.exp(m - m_safe)
                lsum = lsum * alpha + s.sum(-1, keepdims=True)
                acc = acc * alpha + pv
            m = m_new
        empty = lsum == 0
        out[..., i0:i1, :] = acc / xp.where(empty, 1, lsum)
        m_safe = xp.where(m == -np.inf, 0, m)
        lse[..., i0:i1] = xp.where(empty, np.inf, m_safe + xp.log(xp.where(empty, 1, lsum)))[..., 0]
    return out.astype(dt, copy=False), lse


def _flash_bwd_kernel(xp, q, k, v, mask, g_out, out, lse, g_lse, scale, causal,
                      mask_grad=True):
    """dq, dk, dv and the score gradient ds (= the float mask's; batch x L x 0 unless
    ``mask_grad``), recomputing the probabilities block by block from ``lse``."""
    cdt = lse.dtype
    if mask is not None and mask.dtype != np.bool_ and mask.dtype != cdt:
        mask = mask.astype(cdt)
    if xp is np:
        res = _ck.backward(*(np.asarray(a, dtype=cdt) for a in (q, k, v)), mask, g_out, out,
                           lse, g_lse, scale, causal, mask_grad)
        if res is not None:
            dq, dk, dv, ds = res
            return dq, dk, dv, ds if mask_grad else xp.empty(lse.shape + (0,), cdt)
    # contiguous: BLAS skips operands with zero strides (the expanded grad of a .sum())
    q, k, v, g_out, out = (xp.ascontiguousarray(a, dtype=cdt) for a in (q, k, v, g_out, out))
    L, S = q.shape[-2], k.shape[-2]
    batch = lse.shape[:-1]
    delta = (g_out * out).sum(-1)
    if g_lse is not None:
        delta = delta - g_lse
    sc = xp.asarray(scale, dtype=cdt)
    qs = q * sc
    kT = xp.swapaxes(k, -1, -2)
    dq = xp.zeros(batch + (L, q.shape[-1]), cdt)
    dk = xp.zeros(batch + (S, k.shape[-1]), cdt)
    dv = xp.zeros(batch + (S, v.shape[-1]), cdt)
    ds = xp.zeros(batch + (L, S if mask_grad else 0), cdt)
    bk = max(S, 1) if int(np.prod(batch)) * L * S <= SINGLE_BLOCK_SCORES else BLOCK_K_BACKWARD
    for j0 in range(0, S, bk):
        j1 = min(S, j0 + bk)
        a = min(j0, L) if causal else 0  # causal: rows before j0 see none of these keys
        s = xp.matmul(qs[..., a:, :], kT[..., j0:j1])
        if mask is not None:
            mb = _mask_block(mask, a, L, j0, j1)
            s = xp.where(mb, s, -np.inf) if mask.dtype == np.bool_ else s + mb
        if causal and j1 - 1 > a:
            s += xp.asarray(_causal_add(a, L, j0, j1, cdt))
        s -= lse[..., a:, None]
        p = xp.exp(s, out=s)
        go = g_out[..., a:, :]
        dv[..., j0:j1, :] = xp.matmul(xp.swapaxes(p, -1, -2), go)
        dsb = xp.matmul(go, xp.swapaxes(v[..., j0:j1, :], -1, -2))
        dsb -= delta[..., a:, None]
        dsb *= p
        dq[..., a:, :] += xp.matmul(dsb, k[..., j0:j1, :]) * sc
        dk[..., j0:j1, :] = xp.matmul(xp.swapaxes(dsb, -1, -2), q[..., a:, :]) * sc
        if mask_grad:
            ds[..., a:, j0:j1] = dsb
    return dq, dk, dv, ds


def _flash_bwd_shape(q, k, v, mask, g_out, out, lse, g_lse, scale, causal, mask_grad=True):
    batch, dt = tuple(lse.shape[:-1]), lse.dtype
    L, S = q.shape[-2], k.shape[-2]
    return ((batch + (L, q.shape[-1]), dt), (batch + (S, k.shape[-1]), dt),
            (batch + (S, v.shape[-1]), dt), (batch + (L, S if mask_grad else 0), dt))


def _flash_bwd_vjp(ctx, grads, q, k, v, mask, g_out, out, lse, g_lse, scale, causal,
                   mask_grad=True):
    """The derivative of the one-block backward, in ember ops (double backward, forward AD).
    With p = exp(s - lse), s = q k^T scale (+ mask), delta = rowsum(g_out out) - g_lse,
    ds = p (g_out v^T - delta), the outputs are dq = ds k scale, dk = ds^T q scale,
    dv = p^T g_out and ds; each input's cotangent follows that chain back."""
    Gq, Gk, Gv, Gs = grads
    if not mask_grad:
        Gs = None  # ds is empty
    need = ctx.needs_input_grad
    cdt = lse.dtype
    q, k, v, g_out, out = (t.to(cdt) for t in (q, k, v, g_out, out))
    L, S = q.shape[-2], k.shape[-2]
    s = (q * scale).matmul(k.transpose(-1, -2))
    bool_mask = mask is not None and not mask.dtype.is_floating_point
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), -math.inf) if bool_mask else s + mask.to(cdt)
    if causal and S > 1:
        s = s + host_tensor(_causal_add(0, L, 0, S, cdt.np), s)
    p = (s - lse.unsqueeze(-1)).exp()
    delta = (g_out * out).sum(-1)
    if g_lse is not None:  # None: the logsumexp output received no gradient
        delta = delta - g_lse
    dP = g_out.matmul(v.transpose(-1, -2))
    ds = p * (dP - delta.unsqueeze(-1))
    # the cotangent of ds: its own, and through dq = ds k scale and dk = ds^T q scale
    Gds = Gs
    if Gq is not None:
        t = Gq.matmul(k.transpose(-1, -2)) * scale
        Gds = t if Gds is None else Gds + t
    if Gk is not None:
        t = q.matmul(Gk.transpose(-1, -2)) * scale
        Gds = t if Gds is None else Gds + t
    gq = None if Gk is None else ds.matmul(Gk) * scale
    gk = None if Gq is None else ds.transpose(-1, -2).matmul(Gq) * scale
    gv = gg = Gp = Gdelta = None
    if Gds is not None:
        GdP = Gds * p
        Gp = Gds * (dP - delta.unsqueeze(-1))
        Gdelta = -GdP.sum(-1)
        gg = GdP.matmul(v)
        gv = GdP.transpose(-1, -2).matmul(g_out)
    if Gv is not None:  # dv = p^T g_out
        t = g_out.matmul(Gv.transpose(-1, -2))
        Gp = t if Gp is None else Gp + t
        t = p.matmul(Gv)
        gg = t if gg is None else gg + t
    gout = glse_g = None
    if Gdelta is not None:
        t = Gdelta.unsqueeze(-1) * out
        gg = t if gg is None else gg + t
        gout = Gdelta.unsqueeze(-1) * g_out
        glse_g = -Gdelta
    gm = glse = None
    if Gp is not None:  # p = exp(s - lse), s = q k^T scale + mask
        Gsc = Gp * p
        glse = -Gsc.sum(-1)
        t = Gsc.matmul(k) * scale
        gq = t if gq is None else gq + t
        t = Gsc.transpose(-1, -2).matmul(q) * scale
        gk = t if gk is None else gk + t
        gm = None if bool_mask else Gsc
    res = [gq, gk, gv, gm, gg, gout, glse, glse_g]
    return tuple(_to_input_dtypes(ctx.in_meta, [r if n else None for r, n in zip(res, need)]))


FLASH_ATTENTION_BACKWARD = Op("_flash_attention_backward", _flash_bwd_kernel, _flash_bwd_vjp,
                              n_out=4, shape=_flash_bwd_shape)


def _flash_vjp(ctx, grads, q, k, v, mask, scale, causal):
    g_out, g_lse = grads  # None: that output received no gradient
    out, lse = ctx.out
    need = ctx.needs_input_grad
    if g_out is None:
        g_out = zeros_like(out)
    # one fused operator in every mode (its own derivative is in ember ops); the score
    # gradient (L x S) only when a float mask wants its gradient
    res = list(FLASH_ATTENTION_BACKWARD(q, k, v, mask, g_out, out, lse, g_lse, scale=scale,
                                        causal=causal, mask_grad=bool(need[3])))
    return tuple(_to_input_dtypes(ctx.in_meta, [r if n else None for r, n in zip(res, need)]))


def _to_input_dtypes(in_meta, res):
    for i, r in enumerate(res):
        if r is not None and in_meta[i] is not None and r.dtype.np != in_meta[i][1]:
            res[i] = r.to(_dt.from_np(in_meta[i][1]))
    return res


def _flash_shape(q, k, v, mask, scale, causal):
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]] + \
        ([mask.shape[:-2]] if mask is not None else [])
    batch = _meta.broadcast_shapes(*shapes)
    lse_dt = _dt.float32 if q.dtype.np in H._HALF else q.dtype
    return ((batch + (q.shape[-2], v.shape[-1]), q.dtype), (batch + (q.shape[-2],), lse_dt))


def _flash_batch(op, args, bdims, params, batch_size):
    """The kernel broadcasts the leading dims of q, k, v and mask: the vmap batch in front,
    lower-rank operands padded so their leading dims line up."""
    phys = front_all(args, bdims, batch_size)
    tens = [0 if isinstance(a, Tensor) else None for a in phys]
    return outs_at_front(op(*_front_padded(phys, tens), **params))


FLASH_ATTENTION = Op("_flash_attention", _flash_kernel, _flash_vjp, n_out=2, save_output=True,
                     shape=_flash_shape, batch=_flash_batch)

_BWD_CORE = (2, 2, 2, 2, 2, 2, 1, 1)  # q, k, v, mask, g_out, out: matrices; lse, g_lse: rows


def _flash_bwd_batch(op, args, bdims, params, batch_size):
    """As `_flash_batch`: the vmap batch in front, each operand padded with 1s so that its
    leading (broadcast) dims line up; lse and g_lse have one core dim, the rest two."""
    phys = front_all(args, bdims, batch_size)
    lead = max(a.dim() - 1 - c for a, c in zip(phys, _BWD_CORE) if isinstance(a, Tensor))
    padded = [a.reshape((a.shape[0],) + (1,) * (lead - (a.dim() - 1 - c)) + tuple(a.shape[1:]))
              if isinstance(a, Tensor) else a for a, c in zip(phys, _BWD_CORE)]
    return outs_at_front(op(*padded, **params))


FLASH_ATTENTION_BACKWARD.batch = _flash_bwd_batch


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "_flash_attention", "_flash_attention_backward")
