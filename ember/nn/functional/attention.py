"""``scaled_dot_product_attention``: softmax(q k^T * scale + mask) v as one primitive.

The kernel works FlashAttention style: query rows in blocks, key/value columns in
blocks, keeping a running row maximum, row sum and output accumulator, so the extra
memory is O(L * block) rather than the L x S score matrix.  It also returns the row
log-sum-exp, which the derivative uses to recompute each score block on the fly
(also block by block, in ember ops, so higher derivatives work).  Short sequences
take one block, which is the plain fused formula.
"""
import math

import numpy as np

from ..._core.op import Op
from ..._core.tensor import Tensor
from ...ops import _helpers as H
from ...ops import cat, ones, tensor as _tensor, zeros

__all__ = ["scaled_dot_product_attention"]

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
    out = np.zeros(batch + (L, Ev), dtype=cdt)
    lse = np.full(batch + (L,), np.inf, dtype=cdt)
    if L == 0 or S == 0:
        return out.astype(dt, copy=False), lse
    bq, bk = _blocks(L, S, int(np.prod(batch)))
    kT = np.swapaxes(k, -1, -2)
    bool_mask = mask is not None and mask.dtype == np.bool_
    for i0 in range(0, L, bq):
        i1 = min(L, i0 + bq)
        qb = q[..., i0:i1, :] * np.asarray(scale, dtype=cdt)
        kend = min(S, i1) if causal else S
        m = lsum = acc = None
        for j0 in range(0, kend, bk):
            j1 = min(kend, j0 + bk)
            s = np.matmul(qb, kT[..., j0:j1])
            if mask is not None:
                mb = _mask_block(mask, i0, i1, j0, j1)
                if bool_mask:
                    s = np.where(mb, s, -np.inf)
                else:
                    s = s + mb
            if causal and j1 - 1 > i0:
                s[..., _causal_block(i0, i1, j0, j1)] = -np.inf
            mb_ = s.max(-1, keepdims=True)
            m_new = mb_ if m is None else np.maximum(m, mb_)
            m_safe = np.where(m_new == -np.inf, 0, m_new)
            s -= m_safe
            np.exp(s, out=s)
            pv = np.matmul(s, v[..., j0:j1, :])
            if m is None:
                lsum, acc = s.sum(-1, keepdims=True), pv
            else:
                alpha = np.exp(m - m_safe)
                lsum = lsum * alpha + s.sum(-1, keepdims=True)
                acc = acc * alpha + pv
            m = m_new
        empty = lsum == 0
        out[..., i0:i1, :] = acc / np.where(empty, 1, lsum)
        m_safe = np.where(m == -np.inf, 0, m)
        lse[..., i0:i1] = np.where(empty, np.inf, m_safe + np.log(np.where(empty, 1, lsum)))[..., 0]
    return out.astype(dt, copy=False), lse


def _flash_vjp(ctx, grads, q, k, v, mask, scale, causal):
    g_out, g_lse = grads
    out, lse = ctx.out
    need = ctx.needs_input_grad
    L, S = q.shape[-2], k.shape[-2]
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
            s = s.masked_fill(_tensor(_causal_block(a, L, j0, j1)), -math.inf)
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
    res = [dq, dk, dv, dm]
    for i, r in enumerate(res):
        if r is not None and odt[i] is not None and r.dtype.np != odt[i][1]:
            res[i] = r.to(odt[i][1])
    return tuple(res)


def _flash_shape(q, k, v, mask, scale, causal):
    shapes = [q.shape[:-2], k.shape[:-2], v.shape[:-2]] + \
        ([mask.shape[:-2]] if mask is not None else [])
    batch = np.broadcast_shapes(*shapes)
    lse_dt = np.float32 if q.dtype in H._HALF else q.dtype
    return ((batch + (q.shape[-2], v.shape[-1]), q.dtype), (batch + (q.shape[-2],), lse_dt))


FLASH_ATTENTION = Op("_flash_attention", _flash_kernel, _flash_vjp, n_out=2, save_output=True,
                     shape=_flash_shape)


def _check(query, key, value, attn_mask, is_causal):
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {H.type_name(query.dtype.np).lower()} key.dtype: "
                           f"{H.type_name(key.dtype.np).lower()} and value.dtype: "
                           f"{H.type_name(value.dtype.np).lower()} instead.")
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have at "
                           "least 2 dimensions")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected query and key to have the same embedding size, but got "
                           f"query: {list(query.shape)} and key: {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"Expected key and value to have the same sequence length, but got "
                           f"key: {list(key.shape)} and value: {list(value.shape)}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        md = attn_mask.dtype
        if not (md.is_floating_point and md == query.dtype) and md.name != "bool":
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {md} and  query.dtype: "
                               f"{query.dtype} instead.")


def _repeat_kv(query, key, value):
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError(f"number of heads in key/value must divide number of heads in query, "
                           f"got query heads {hq}, key heads {hk} and value heads {hv}")
    if hk != hq:
        key = key.repeat_interleave(hq // hk, dim=-3)
    if hv != hq:
        value = value.repeat_interleave(hq // hv, dim=-3)
    return key, value


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The unfused formula (used with dropout, whose mask needs the full probabilities)."""
    from ...ops import softmax
    s = query.matmul(key.transpose(-1, -2)) * scale
    if is_causal:
        L, S = query.shape[-2], key.shape[-2]
        s = s.masked_fill(ones((L, S), dtype=_bool()).triu(1), -math.inf)
    if attn_mask is not None:
        s = s.masked_fill(attn_mask.logical_not(), -math.inf) if attn_mask.dtype == _bool() \
            else s + attn_mask
    p = softmax(s, -1)
    from .dropout import dropout
    return dropout(p, dropout_p, True).matmul(value)


def _bool():
    from ..._core import dtype as _dt
    return _dt.bool


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """Computes scaled dot product attention on query, key and value tensors, using an
    optional attention mask if passed, and applying dropout if a probability greater than
    0.0 is specified."""
    _check(query, key, value, attn_mask, is_causal)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    if enable_gqa and query.dim() >= 3:
        key, value = _repeat_kv(query, key, value)
    if dropout_p > 0.0:
        return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, float(scale))
    out, _ = FLASH_ATTENTION(query, key, value, attn_mask, scale=float(scale),
                             causal=bool(is_causal))
    return out



