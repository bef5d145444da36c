"""Linear layers: ``linear`` (a fused x @ W^T + b primitive: the hottest op of an MLP) and
``bilinear`` (an einsum composite)."""
import numpy as np

from ..._core.blas_threads import matmul as _gemm
from ..._core.dispatch import overridable
from ..._core.op import Op
from ...ops._helpers import _F32, _HALF, apply, cj, jvp_sum
from ...ops.blas import cpp_name, einsum, same_dtype

__all__ = ["linear", "bilinear"]


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
    g2 = g.reshape(-1, out_f)
    if need[0]:
        gx = (g2 @ cj(w)).reshape(x.shape) if x.dim() != 2 else g @ cj(w)
    if need[1]:
        gw = g2.mT @ cj(x.reshape(-1, in_f))  # complex: conjugate-Wirtinger, like matmul
    if len(need) > 2 and need[2]:
        gb = g2.sum(0)
    return gx, gw, gb


def _linear_shape(x, w, b=None):
    return tuple(x.shape[:-1]) + tuple(w.shape[:-1]), x.dtype


def _linear_jvp(out, ts, x, w, b=None):
    tx, tw = same_dtype(ts[0], x), same_dtype(ts[1], w)
    tb = ts[2] if len(ts) > 2 else None
    return jvp_sum(None if tx is None else apply(LINEAR, (tx, w), {}),
                   None if tw is None else apply(LINEAR, (x, tw), {}), tb)


LINEAR = Op("linear", _linear_kernel, _linear_vjp, shape=_linear_shape, save_inputs=(0, 1),
            category="nn", jvp=_linear_jvp)


@overridable
def linear(input, weight, bias=None):
    """Applies a linear transformation to the incoming data: y = x A^T + b."""
    if bias is None:
        return apply(LINEAR, (input, weight), {})
    return apply(LINEAR, (input, weight, bias), {})


@overridable
def bilinear(input1, input2, weight, bias=None):
    """Applies a bilinear transformation to the incoming data: y = x1^T A x2 + b."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got "
                           f"{weight.dim()}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    return y if bias is None else y + bias
