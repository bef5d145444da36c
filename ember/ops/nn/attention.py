"""``_flash_attention``: softmax(q k^T * scale + mask) v as one primitive.

The kernel works FlashAttention style: query rows in blocks, key/value columns in
blocks, keeping a running row maximum, row sum and output accumulator, so the extra
memory is O(L * block) rather than the L x S score matrix.  It also returns the row
log-sum-exp, which the derivative uses to recompute each score block on the fly
(also block by block, in ember ops, so higher derivatives work).  Short sequences
take one block, which is the plain fused formula; their derivative, in every mode, is one
fused NumPy kernel, ``_flash_attention_backward``, whose five matmuls replace the
recomputation, and whose own derivative is written in ember ops (double backward).
"""
import math

import numpy as np

from ..._core import dtype as _dt
from ..._core import meta as _meta
from ..._core.op import Op
from ..._core.tensor import Tensor, host_tensor
from .. import _helpers as H
from .._batching import _front_padded
from ..creation import zeros
from ..shape import cat
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


def _flash_bwd_kernel(xp, q, k, v, mask, g_out, out, lse, g_lse, scale, causal):
    """dq, dk, dv and the score gradient (= the float mask's) of the one-block path."""
    cdt = lse.dtype
    # contiguous: BLAS skips operands with zero strides (the expanded grad of a .sum())
    q, k, v, g_out, out = (xp.ascontiguousarray(a, dtype=cdt) for a in (q, k, v, g_out, out))
    L, S = q.shape[-2], k.shape[-2]
    kT = xp.swapaxes(k, -1, -2)
    s = xp.matmul(q * xp.asarray(scale, dtype=cdt), kT)
    if mask is not None:
        s = xp.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask.astype(cdt)
    if causal and S > 1:
        s += xp.asarray(_causal_add(0, L, 0, S, cdt))
    s -= lse[..., None]
    p = xp.exp(s, out=s)
    delta = (g_out * out).sum(-1) - g_lse
    dv = xp.matmul(xp.swapaxes(p, -1, -2), g_out)
    ds = xp.matmul(g_out, xp.swapaxes(v, -1, -2))
    ds -= delta[..., None]
    ds *= p
    sc = xp.asarray(scale, dtype=cdt)
    dq = xp.matmul(ds, k) * sc
    dk = xp.matmul(xp.swapaxes(ds, -1, -2), q) * sc
    return dq, dk, dv, ds


def _flash_bwd_shape(q, k, v, mask, g_out, out, lse, g_lse, scale, causal):
    batch, dt = tuple(lse.shape[:-1]), lse.dtype
    L, S = q.shape[-2], k.shape[-2]
    return ((batch + (L, q.shape[-1]), dt), (batch + (S, k.shape[-1]), dt),
            (batch + (S, v.shape[-1]), dt), (batch + (L, S), dt))


def _flash_bwd_vjp(ctx, grads, q, k, v, mask, g_out, out, lse, g_lse, scale, causal):
    """The derivative of the one-block backward, in ember ops (double backward, forward AD).
    With p = exp(s - lse), s = q k^T scale (+ mask), delta = rowsum(g_out out) - g_lse,
    ds = p (g_out v^T - delta), the outputs are dq = ds k scale, dk = ds^T q scale,
    dv = p^T g_out and ds; each input's cotangent follows that chain back."""
    Gq, Gk, Gv, Gs = grads
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
    delta = (g_out * out).sum(-1) - g_lse
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
    g_out, g_lse = grads
    out, lse = ctx.out
    need = ctx.needs_input_grad
    L, S = q.shape[-2], k.shape[-2]
    # one block: the fused backward op in every mode (its own derivative is in ember ops);
    # longer sequences: the blocked recomputation below (memory O(L * block))
    if lse.shape.numel() * S <= SINGLE_BLOCK_SCORES:
        res = list(FLASH_ATTENTION_BACKWARD(q, k, v, mask, g_out, out, lse, g_lse, scale=scale,
                                            causal=causal))
        return tuple(_to_input_dtypes(ctx.in_meta, [r if n else None
                                                     for r, n in zip(res, need)]))
    cdt = lse.dtype
    if q.dtype != cdt:  # half inputs: the derivative is computed in float32 too
        q, k, v, g_out, out = (t.to(cdt) for t in (q, k, v, g_out, out))
        if mask is not None and mask.dtype.is_floating_point:
            mask = mask.to(cdt)
    delta = (g_out * out).sum(-1) - g_lse
    batch = lse.shape[:-1]
    bk = S if batch.numel() * L * S <= SINGLE_BLOCK_SCORES else BLOCK_K_BACKWARD
    bk = max(bk, 1)
    dq = None
    dks, dvs, dms = [], [], []
    bool_mask = mask is not None and mask.dtype.is_floating_point is False
    for j0 in range(0, S, bk):
        j1 = min(S, j0 + bk)
        a = min(j0, L) if causal else 0
        qs, go, kj, vj = q[..., a:, :], g_out[..., a:, :], k[..., j0:j1, :], v[..., j0:j1, :]
        s = qs.matmul(kj.transpose(-1, -2)) * scale
        if mask is not None:
            mb = _mask_block(mask, a, L, j0, j1)
            s = s.masked_fill(mb.logical_not(), -math.inf) if bool_mask else s + mb
        if causal and j1 - 1 > a:
            s = s + host_tensor(_causal_add(a, L, j0, j1, s.dtype.np), s)
        p = (s - lse[..., a:].unsqueeze(-1)).exp()
        dvs.append(p.transpose(-1, -2).matmul(go))
        ds = p * (go.matmul(vj.transpose(-1, -2)) - delta[..., a:].unsqueeze(-1))
        if need[0]:
            c = ds.matmul(kj) * scale
            if a:
                c = cat([zeros(c.shape[:-2] + (a, c.shape[-1]), dtype=c.dtype), c], -2)
            dq = c if dq is None else dq + c
        dks.append(ds.transpose(-1, -2).matmul(qs) * scale)
        if need[3]:
            dms.append(ds)
    odt = ctx.in_meta
    dv = cat(dvs, -2) if need[2] and dvs else None
    dk = cat(dks, -2) if need[1] and dks else None
    dm = cat(dms, -1) if need[3] and dms else None
    return tuple(_to_input_dtypes(odt, [dq, dk, dv, dm]))


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
