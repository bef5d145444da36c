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
