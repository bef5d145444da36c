"""``scaled_dot_product_attention``: softmax(q k^T * scale + mask) v as one primitive.

The kernel works FlashAttention style: query rows in blocks, key/value columns in
blocks, keeping a running row maximum, row sum and output accumulator, so the extra
memory is O(L * block) rather than the L x S score matrix.  It also returns the row
log-sum-exp, which the derivative uses to recompute each score block on the fly
(also block by block, in ember ops, so higher derivatives work).  Short sequences
take one block, which is the plain fused formula; their first derivative (no
``create_graph``, no active mode) is one fused NumPy kernel, ``_flash_attention_backward``,
whose five matmuls replace the recomputation in ember ops.
"""
import math

import numpy as np

from ..._core import dtype as _dt
from ..._core import meta as _meta
from ..._core.dispatch import overridable
from ..._core.op import Op
from ..._core.state import STATE
from ...ops import _helpers as H
from ...ops.blas import cpp_name
from ...ops import cat, ones, tensor as _tensor, zeros

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

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
                s += _causal_add(i0, i1, j0, j1, cdt)
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


def _flash_bwd_kernel(xp, q, k, v, mask, g_out, out, lse, g_lse, scale, causal):
    """dq, dk, dv and the score gradient (= the float mask's) of the one-block path."""
    cdt = lse.dtype
    # contiguous: BLAS skips operands with zero strides (the expanded grad of a .sum())
    q, k, v, g_out, out = (np.ascontiguousarray(a, dtype=cdt) for a in (q, k, v, g_out, out))
    L, S = q.shape[-2], k.shape[-2]
    kT = np.swapaxes(k, -1, -2)
    s = np.matmul(q * np.asarray(scale, dtype=cdt), kT)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask.astype(cdt)
    if causal and S > 1:
        s += _causal_add(0, L, 0, S, cdt)
    s -= lse[..., None]
    p = np.exp(s, out=s)
    delta = (g_out * out).sum(-1) - g_lse
    dv = np.matmul(np.swapaxes(p, -1, -2), g_out)
    ds = np.matmul(g_out, np.swapaxes(v, -1, -2))
    ds -= delta[..., None]
    ds *= p
    sc = np.asarray(scale, dtype=cdt)
    dq = np.matmul(ds, k) * sc
    dk = np.matmul(np.swapaxes(ds, -1, -2), q) * sc
    return dq, dk, dv, ds


def _flash_bwd_shape(q, k, v, mask, g_out, out, lse, g_lse, scale, causal):
    batch, dt = tuple(lse.shape[:-1]), lse.dtype
    L, S = q.shape[-2], k.shape[-2]
    return ((batch + (L, q.shape[-1]), dt), (batch + (S, k.shape[-1]), dt),
            (batch + (S, v.shape[-1]), dt), (batch + (L, S), dt))


FLASH_ATTENTION_BACKWARD = Op("_flash_attention_backward", _flash_bwd_kernel, None, n_out=4,
                              differentiable=False, shape=_flash_bwd_shape)


def _flash_vjp(ctx, grads, q, k, v, mask, scale, causal):
    g_out, g_lse = grads
    out, lse = ctx.out
    need = ctx.needs_input_grad
    L, S = q.shape[-2], k.shape[-2]
    if not (STATE.grad_enabled or STATE.intercept) and \
            lse.shape.numel() * S <= SINGLE_BLOCK_SCORES:
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
            s = s + _tensor(_causal_add(a, L, j0, j1, s.dtype.np))
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


FLASH_ATTENTION = Op("_flash_attention", _flash_kernel, _flash_vjp, n_out=2, save_output=True,
                     shape=_flash_shape)


def _check(query, key, value, attn_mask, is_causal):
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {cpp_name(query.dtype)} key.dtype: "
                           f"{cpp_name(key.dtype)} and value.dtype: "
                           f"{cpp_name(value.dtype)} instead.")
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
                               f"dtype, but got attn_mask.dtype: {cpp_name(md)} and  query.dtype: "
                               f"{cpp_name(query.dtype)} instead.")


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


@overridable
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


# ---- multi-head attention ---------------------------------------------------------------------

def _canonical_mask(mask, name, other_name, other_type, target_dtype):
    """Boolean masks (True = not allowed) become additive float masks (-inf)."""
    if mask is None:
        return None
    if mask.dtype == _bool():
        return zeros(mask.shape, dtype=target_dtype).masked_fill(mask, -math.inf)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _pad_last(t, value=0.0):
    """Append one column to the last dim (for bias_k/bias_v and add_zero_attn)."""
    return cat([t, t.new_full(t.shape[:-1] + (1,), value)], -1)


def _in_projection(query, key, value, w, b, sep, E):
    from .linear import linear
    if sep is not None:
        wq, wk, wv = sep
        bq, bk, bv = (None,) * 3 if b is None else b.chunk(3)
        return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    if key is value:
        if query is key:
            return linear(query, w, b).chunk(3, -1)
        wq, wkv = w.split([E, 2 * E])
        bq, bkv = (None, None) if b is None else b.split([E, 2 * E])
        return (linear(query, wq, bq),) + tuple(linear(key, wkv, bkv).chunk(2, -1))
    wq, wk, wv = w.chunk(3)
    bq, bk, bv = (None,) * 3 if b is None else b.chunk(3)
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


@overridable
def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Forward method for MultiHeadAttention (inputs are (L, N, E) or unbatched (L, E))."""
    from ...ops import baddbmm, bmm, softmax
    from .linear import linear
    batched = query.dim() == 3
    if query.dim() not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.dim()}-D query tensor")
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"For {'batched (3-D)' if batched else 'unbatched (2-D)'} `query`, "
                             f"expected `key` and `value` to be {query.dim()}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    S = key.shape[0]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {E}")
    head_dim = E // num_heads
    if head_dim * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {list(key.shape)} does not match value shape "
                             f"{list(value.shape)}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    dtype = query.dtype
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", "attn_mask",
                                       None, dtype)
    use_causal_flag = is_causal and key_padding_mask is None and not need_weights
    if use_causal_flag:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, None, dtype)
        is_causal = False if key_padding_mask is not None else is_causal
    sep = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, sep, E)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(L, S)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (N * num_heads, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(N * num_heads, L, S)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = cat([k, bias_k.expand(1, N, E)], 0)
        v = cat([v, bias_v.expand(1, N, E)], 0)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    q = q.reshape((L, N * num_heads, head_dim)).transpose(0, 1)
    k = k.reshape((k.shape[0], N * num_heads, head_dim)).transpose(0, 1) if static_k is None \
        else static_k
    v = v.reshape((v.shape[0], N * num_heads, head_dim)).transpose(0, 1) if static_v is None \
        else static_v
    if add_zero_attn:
        k = cat([k, zeros((N * num_heads, 1, head_dim), dtype=k.dtype)], 1)
        v = cat([v, zeros((N * num_heads, 1, head_dim), dtype=v.dtype)], 1)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    S = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape((N, 1, 1, S)).expand(N, num_heads, 1, S) \
            .reshape((N * num_heads, 1, S))
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        qs = q * math.sqrt(1.0 / head_dim)
        kt = k.transpose(-2, -1)
        w = bmm(qs, kt) if attn_mask is None else baddbmm(attn_mask, qs, kt)
        w = softmax(w, -1)
        if dropout_p > 0.0:
            from .dropout import dropout
            w = dropout(w, p=dropout_p)
        out = bmm(w, v).transpose(0, 1).reshape((L * N, E))
        out = linear(out, out_proj_weight, out_proj_bias).reshape((L, N, E))
        w = w.reshape((N, num_heads, L, S))
        if average_attn_weights:
            w = w.mean(1)
        if not batched:
            out, w = out.squeeze(1), w.squeeze(0)
        return out, w
    if attn_mask is not None:
        attn_mask = attn_mask.reshape((N, num_heads, -1, S)) if attn_mask.shape[0] != 1 \
            else attn_mask.unsqueeze(0)
    q = q.reshape((N, num_heads, L, head_dim))
    k = k.reshape((N, num_heads, S, head_dim))
    v = v.reshape((N, num_heads, S, head_dim))
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape((L * N, E))
    out = linear(out, out_proj_weight, out_proj_bias).reshape((L, N, E))
    if not batched:
        out = out.squeeze(1)
    return out, None
