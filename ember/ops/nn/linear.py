"""The fused linear primitive, x @ W^T + b: the hottest op of an MLP (one GEMM over
all leading dims)."""
import numpy as np

from ..._core.blas_threads import matmul as _gemm
from ..._core import meta as _meta
from ..._core.op import Op
from .._batching import _batched_front, _move_to_front
from .._helpers import _F32, _HALF, apply, cj, jvp_sum
from ..blas import cpp_name, same_dtype

__all__ = []


def _mm_error(x, w):
    rows = int(np.prod(x.shape[:-1])) if x.ndim > 1 else 1
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and "
                        f"{w.shape[-1]}x{w.shape[0]})")


def _linear_kernel(xp, x, w, b=None):
    if x.ndim == 0 or w.ndim == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are "
                           f"{x.ndim}D and {w.ndim}D")
    if w.ndim != 2 and not (w.ndim == 1 and b is None):
        raise RuntimeError(f"mat2 must be a matrix, got {w.ndim}-D tensor")
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
        other = w.dtype if x.dtype != w.dtype else b.dtype
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{cpp_name(x.dtype)} != {cpp_name(other)}")
    if x.shape[-1] != w.shape[-1]:
        raise _mm_error(x, w)
    dt = x.dtype
    half = dt in _HALF
    if half:
        x, w = x.astype(_F32), w.astype(_F32)
        b = b.astype(_F32) if b is not None else None
    if w.ndim == 1:
        y = x @ w
    elif x.ndim > 2:
        # one 2-D GEMM instead of a batched matmul over the leading dims
        y = _gemm(xp, x.reshape(-1, x.shape[-1]), w.T).reshape(x.shape[:-1] + (w.shape[0],))
    else:
        y = _gemm(xp, x, w.T)
    if b is not None:
        y = y + b if y.ndim == 0 else xp.add(y, b, out=y)
    return y.astype(dt) if half else y


def _linear_vjp(ctx, g, x, w, b=None):
    need = ctx.needs_input_grad
    gx = gw = gb = None
    if w.dim() == 1:  # linear(x, w) with a vector weight is x @ w (torch allows it without bias)
        if need[0]:
            gx = g.unsqueeze(-1) * cj(w)
        if need[1]:
            gw = (g.unsqueeze(-1) * cj(x)).reshape(-1, x.shape[-1]).sum(0)
        return gx, gw
    out_f, in_f = w.shape
    flat = x.dim() == 2  # the common 2-D case: no reshapes (each one a dispatched view)
    g2 = g if flat else g.reshape(-1, out_f)
    if need[0]:
        gx = g @ cj(w) if flat else (g2 @ cj(w)).reshape(x.shape)
    if need[1]:
        # complex: conjugate-Wirtinger, like matmul
        gw = g2.mT @ cj(x if flat else x.reshape(-1, in_f))
    if len(need) > 2 and need[2]:
        gb = g2.sum(0)
    return gx, gw, gb


def _linear_shape(x, w, b=None):
    if x.shape and w.shape and not _meta.sizes_equal(x.shape[-1], w.shape[-1]):
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, x.shape))} and "
                           f"{'x'.join(map(str, reversed(w.shape)))})")
    return tuple(x.shape[:-1]) + tuple(w.shape[:-1]), x.dtype


def _linear_jvp(out, ts, x, w, b=None):
    tx, tw = same_dtype(ts[0], x), same_dtype(ts[1], w)
    tb = ts[2] if len(ts) > 2 else None
    return jvp_sum(None if tx is None else apply(LINEAR, (tx, w), {}),
                   None if tw is None else apply(LINEAR, (x, tw), {}), tb)


def _linear_batch(op, args, bdims, params, batch_size):
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else None
    bx, bw = bdims[0], bdims[1]
    bb = bdims[2] if len(bdims) > 2 else None
    if bw is None and bb is None:
        # shared weights: the vmap batch is one more leading dim of x (still one GEMM)
        return op(_move_to_front(x, bx), *args[1:], **params), 0
    # per-example weights: a batched matmul
    xb = _batched_front(x, bx, batch_size)
    lead = tuple(xb.shape[1:-1])
    out = xb.reshape(batch_size, -1, xb.shape[-1]).matmul(
        _batched_front(w, bw, batch_size).transpose(-1, -2))
    if b is not None:
        out = out + _batched_front(b, bb, batch_size).unsqueeze(1)
    return out.reshape((batch_size,) + lead + (out.shape[-1],)), 0


LINEAR = Op("linear", _linear_kernel, _linear_vjp, shape=_linear_shape, save_inputs=(0, 1),
            category="nn", jvp=_linear_jvp, batch=_linear_batch)


