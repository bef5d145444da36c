"""The normalization primitive behind batch/layer/group/instance norm.

``_normalize(x, dims)`` returns (xhat, mean, rstd) in one pass (the C kernel where it
fits).  Its derivative is the primitive ``_normalize_backward``: the closed-form
normalization gradient in one kernel (C where it fits, else NumPy), taking the gradients
of all three outputs (None for an output that received none, as torch's undefined
gradients: its terms are left out; the vjp materialises zeros only for an unused xhat).
That kernel's own derivative is written in ember ops, so double backward works, and
eager, traced and vmapped backward passes compute the same thing.
"""
from ..._core import ckernels as _ck
from ..._core import meta as _meta
from ..._core.ckernels import layer_norm as _ln_c
from ..._core.op import Op
from .._batching import _batched_front, _move_to_front
from .._helpers import apply, type_name
from ..creation import zeros_like
from .conv import _compute

__all__ = []


def _normalize_kernel(xp, x, dims, eps):
    a, back = _compute(x)
    if a.dtype.kind not in "f":
        raise NotImplementedError(f"\"normalize\" not implemented for '{type_name(x.dtype)}'")
    fused = _ck.normalize(a, dims, eps)
    if fused is not None:
        xc, mean, rstd = fused
    else:
        mean = a.mean(axis=dims, keepdims=True)
        xc = a - mean
        var = xp.mean(xc * xc, axis=dims, keepdims=True)
        rstd = 1.0 / xp.sqrt(var + eps)
        xc *= rstd
    if back is not None:
        return xc.astype(back), mean.astype(back), rstd.astype(back)
    return xc, mean, rstd


def _count(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _normalize_vjp(ctx, grads, x, dims, eps):
    gxh, gm, gr = grads
    xhat, _, rstd = ctx.out
    if gxh is None:  # only the statistics are used (None: the output received no gradient)
        gxh = zeros_like(xhat)
    return NORMALIZE_BACKWARD(gxh, gm, gr, xhat, rstd, dims=dims,
                              n=_count(ctx.in_meta[0][0], dims))


def _normalize_shape(x, dims, eps):
    stat = (_meta.reduce_shape(x.shape, dims, True), x.dtype)
    return (x.shape, x.dtype), stat, stat


def _normalize_batch(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    dims = tuple(d + 1 if d >= 0 else d for d in params["dims"])
    return op(x, dims=dims, eps=params["eps"]), [0, 0, 0]


NORMALIZE = Op("_normalize", _normalize_kernel, _normalize_vjp, save_inputs=False,
               save_output=True, n_out=3, category="nn", shape=_normalize_shape,
               batch=_normalize_batch)


def normalize_stats(x, dims, eps):
    """(xhat, mean, rstd) of ``x`` over ``dims`` (a sorted tuple), stats kept as dims of 1."""
    return apply(NORMALIZE, (x,), {"dims": tuple(dims), "eps": float(eps)})


# ---- the derivative ------------------------------------------------------------------------
# gx = (gxh - mean(gxh) - xhat * mean(gxh * xhat)) * rstd + gm / n - xhat * gr * rstd^2 / n,
# means over ``dims``; gm and gr have the statistics' shape (``dims`` kept as size 1).

def _normalize_backward_kernel(xp, gxh, gm, gr, xhat, rstd, dims, n):
    if gm is not None and not gm.any():
        gm = None
    if gr is not None and not gr.any():
        gr = None
    fused = _ck.normalize_backward(gxh, gm, gr, xhat, rstd, dims)
    if fused is not None:
        return fused
    g, back = _compute(gxh)
    xh = _compute(xhat)[0]
    r = _compute(rstd)[0]
    gx = g - g.mean(axis=dims, keepdims=True)
    gx -= xh * (g * xh).mean(axis=dims, keepdims=True)
    gx *= r
    if gm is not None:
        gx += _compute(gm)[0] / n
    if gr is not None:
        gx -= xh * (_compute(gr)[0] * r * r / n)
    return gx if back is None else gx.astype(back)


def _normalize_backward_vjp(ctx, G, gxh, gm, gr, xhat, rstd, dims, n):
    """The derivative of the formula above (its map of gxh is self-adjoint)."""
    need = ctx.needs_input_grad
    Gr = G * rstd
    Gx = (G * xhat).sum(dims, keepdim=True)
    d_gxh = d_gm = d_gr = d_xhat = d_rstd = None
    if need[0]:
        d_gxh = Gr - Gr.mean(dims, keepdim=True) - xhat * (Gr * xhat).mean(dims, keepdim=True)
    if gm is not None and need[1]:
        d_gm = G.sum(dims, keepdim=True) / n
    if gr is not None and need[2]:
        d_gr = Gx * rstd * rstd / -n
    if need[3] or need[4]:
        m_gx = (gxh * xhat).mean(dims, keepdim=True)
    if need[3]:
        d_xhat = -rstd * (G * m_gx + gxh * (Gx / n))
        if gr is not None:
            d_xhat = d_xhat - G * (gr * rstd * rstd / n)
    if need[4]:
        a = gxh - gxh.mean(dims, keepdim=True) - xhat * m_gx
        d_rstd = (G * a).sum(dims, keepdim=True)
        if gr is not None:
            d_rstd = d_rstd - Gx * gr * rstd * (2.0 / n)
    return d_gxh, d_gm, d_gr, d_xhat, d_rstd


def _normalize_backward_batch(op, args, bdims, params, batch_size):
    phys = [None if a is None else _batched_front(a, b, batch_size)
            for a, b in zip(args, bdims)]
    dims = tuple(d + 1 if d >= 0 else d for d in params["dims"])
    return op(*phys, dims=dims, n=params["n"]), 0


NORMALIZE_BACKWARD = Op("_normalize_backward", _normalize_backward_kernel,
                        _normalize_backward_vjp, category="nn",
                        shape=lambda gxh, gm, gr, xhat, rstd, dims, n: (xhat.shape, xhat.dtype),
                        batch=_normalize_backward_batch)


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "_normalize", "_normalize_backward")


# ---- layer_norm with weight and bias: torch's native_layer_norm ------------------------------
# One op (out, mean, rstd) = native_layer_norm(x, weight, bias) for eager calls without a
# dispatch mode: one C pass forward (`ckernels.layer_norm`), and one backward giving the input's,
# weight's and bias's gradients (torch's NativeLayerNormBackward0), where the composite is
# normalize + addcmul, two nodes and five passes each way.  Under a mode (capture, vmap,
# forward AD, ...) `ember.nn.functional.layer_norm` spells the composite, which is also the
# op's decomposition.

def _ln_dims(x, normalized_shape):
    nd = len(x.shape)
    return tuple(range(nd - len(normalized_shape), nd))


def _native_layer_norm_kernel(xp, x, weight, bias, normalized_shape, eps):
    fused = _ln_c.forward(x, weight, bias, len(normalized_shape), eps)
    if fused is not None:
        return fused
    xhat, mean, rstd = _normalize_kernel(xp, x, _ln_dims(x, normalized_shape), eps)
    p = xhat * weight
    return bias + p, mean, rstd


def _native_layer_norm_vjp(ctx, grads, x, weight, bias, normalized_shape, eps):
    g, gm, gr = grads
    _, mean, rstd = ctx.out
    need = ctx.needs_input_grad
    # (x and weight may be Parameters: only the arrays of those are read)
    if g is not None and gm is None and gr is None and _ck._plain(g, mean, rstd):
        fused = _ln_c.backward(g._data, x._data, weight._data, mean._data, rstd._data, *need)
        if fused is not None:
            return tuple(None if a is None else _ck._wrap(a) for a in fused)
    # the composite's gradient in ember ops (double backward, modes)
    dims = _ln_dims(x, normalized_shape)
    lead = tuple(range(x.dim() - len(dims)))
    xhat = (x - mean) * rstd
    gx = gw = gb = None
    if need[0]:
        gxh = zeros_like(x) if g is None else g * weight
        gx = NORMALIZE_BACKWARD(gxh, gm, gr, xhat, rstd, dims=dims, n=_count(x.shape, dims))
    if g is not None and need[1]:
        gw = (g * xhat).sum(lead) if lead else g * xhat
    if g is not None and need[2]:
        gb = g.sum(lead) if lead else g
    return gx, gw, gb


def _native_layer_norm_shape(x, weight, bias, normalized_shape, eps):
    stat = (_meta.reduce_shape(x.shape, _ln_dims(x, normalized_shape), True), x.dtype)
    return (x.shape, x.dtype), stat, stat


def _native_layer_norm_batch(op, args, bdims, params, batch_size):
    x, weight, bias = args
    bx, bw, bb = bdims
    if bw is None and bb is None:
        return op(_move_to_front(x, bx), weight, bias, **params), [0, 0, 0]
    # per-example weight or bias: the composite, its affine broadcast over x's middle dims
    x = _batched_front(x, bx, batch_size)
    k = len(params["normalized_shape"])
    xhat, mean, rstd = NORMALIZE(x, dims=tuple(range(x.dim() - k, x.dim())), eps=params["eps"])
    lift = (batch_size,) + (1,) * (x.dim() - 1 - k) + tuple(params["normalized_shape"])
    w = _batched_front(weight, bw, batch_size).reshape(lift)
    b = _batched_front(bias, bb, batch_size).reshape(lift)
    return (b + xhat * w, mean, rstd), [0, 0, 0]


NATIVE_LAYER_NORM = Op("native_layer_norm", _native_layer_norm_kernel, _native_layer_norm_vjp,
                       save_inputs=(0, 1), save_output=(1, 2), n_out=3, category="nn",
                       shape=_native_layer_norm_shape, batch=_native_layer_norm_batch)
mark_unsupported("jvp", JVP_FROM_VJP, "native_layer_norm")


def native_layer_norm(x, weight, bias, normalized_shape, eps):
    """(out, mean, rstd) of layer_norm over the trailing ``normalized_shape`` (a tuple)."""
    return apply(NATIVE_LAYER_NORM, (x, weight, bias),
                 {"normalized_shape": tuple(normalized_shape), "eps": float(eps)})
