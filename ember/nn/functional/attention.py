"""``scaled_dot_product_attention`` (the ``_flash_attention`` primitive of
``ember.ops.nn.attention``, or the unfused formula with dropout) and
``multi_head_attention_forward``.
"""
import math
import warnings

from ..._core.dispatch import overridable
from ...backends import cuda as _sdp_flags
from ...ops.blas import cpp_name
from ...ops import cat, ones, zeros
from ...ops.nn.attention import FLASH_ATTENTION

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

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


def _check_backend(query, key, value, dropout_p):
    """torch's CPU choice of kernel under the ``sdpa_kernel`` flags: the math kernel takes
    anything; flash attention (ember's kernel) only without dropout and with unit last
    strides; no other backend exists on the CPU."""
    if _sdp_flags.math_sdp_enabled():
        return
    if not _sdp_flags.flash_sdp_enabled():
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This "
                           "is likely due to turning off both the math kernel and the fused "
                           "kernels.")
    if dropout_p > 0.0:
        why = "Both fused kernels do not support non-zero dropout."
    elif (query.stride(-1), key.stride(-1), value.stride(-1)) == (1, 1, 1):
        return
    else:
        why = (f"All fused kernels require the last dimension of the input to have stride 1. "
               f"Got Query.stride(-1): {query.stride(-1)}, Key.stride(-1): {key.stride(-1)}, "
               f"Value.stride(-1): {value.stride(-1)}")
    warnings.warn("Flash attention kernel not used because:", UserWarning, stacklevel=3)
    warnings.warn(why, UserWarning, stacklevel=3)
    raise RuntimeError("No available kernel.  Aborting execution.")


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


def _grouped(query, key, value, attn_mask, scale, is_causal):
    """Grouped-query attention by broadcasting, without copies of key and value: the query
    heads (..., Hk * G, L, E) as (..., Hk, G, L, E) against key/value heads (..., Hk, 1, S, E)
    (query head h reads key/value head h // G, as repeat_interleave would give it)."""
    hq, hk = query.shape[-3], key.shape[-3]
    if hq % hk:
        _repeat_kv(query, key, value)  # raises torch's error
    g = hq // hk
    lead = tuple(query.shape[:-3])
    q = query.reshape(lead + (hk, g) + tuple(query.shape[-2:]))
    k, v = key.unsqueeze(-3), value.unsqueeze(-3)
    mask = attn_mask
    if mask is not None and mask.dim() >= 3:
        mshape = tuple(mask.shape)
        mask = mask.unsqueeze(-3) if mshape[-3] == 1 else \
            mask.reshape(mshape[:-3] + (hk, g) + mshape[-2:])
    out, _ = FLASH_ATTENTION(q, k, v, mask, scale=scale, causal=is_causal)
    return out.reshape(tuple(out.shape[:-4]) + (hq,) + tuple(out.shape[-2:]))


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The unfused formula (used with dropout, whose mask needs the full probabilities)."""
    from ...ops import softmax
    s = query.matmul(key.transpose(-1, -2)) * scale
    if is_causal:
        L, S = query.shape[-2], key.shape[-2]
        s = s.masked_fill(ones((L, S), dtype=_bool(), device=query.device).triu(1), -math.inf)
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
    _check_backend(query, key, value, dropout_p)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    if enable_gqa and query.dim() >= 3:
        if dropout_p == 0.0 and min(key.dim(), value.dim()) >= 3 and \
                key.shape[-3] == value.shape[-3] and query.shape[-3] != key.shape[-3]:
            return _grouped(query, key, value, attn_mask, float(scale), bool(is_causal))
        key, value = _repeat_kv(query, key, value)
    if dropout_p > 0.0:
        # unfused, as torch's CPU path: the dropout mask is drawn from the generator's
        # sequential stream over the whole L x S matrix (torch's draws, bit for bit), which a
        # blocked kernel cannot reproduce block by block
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
