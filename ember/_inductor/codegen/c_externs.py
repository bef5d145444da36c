"""Extern steps computed by generated C instead of their eager kernels: max pooling, whose
eager kernels are several NumPy passes over strided windows (forward) and a bincount
(backward): about a third of a LeNet training step.

``C_EXTERNS[op name](node, fname)`` returns a `CExtern` (the C function and how the
wrapper calls it) or None where the step keeps its eager kernel (a dtype other than
float32/float64, symbolic sizes).  The function's arguments are its outputs, then its
inputs (C-contiguous), then ``int nt``; lead planes (batch x channels) are split over the
threads from ``parallel_min_work`` elements of work.

Semantics are torch's: a window's maximum is its first largest element, or its last NaN;
the index is the flat position in the input plane; positions outside the input (padding,
ceil mode) are never chosen.  The backward adds each gradient at its index.  The C loops
are the eager kernels' own template (`ember._core.ckernels.pooling`), rendered here with
the sizes as literals."""
import dataclasses
import math

from ..._core.ckernels import pooling as _pooling
from .. import sizes as _sizes
from ..passes.lower import _shape
from .c_kernels import pointer_ctype

__all__ = ["CExtern", "C_EXTERNS"]


@dataclasses.dataclass
class CExtern:
    name: str       # the C function
    source: str
    outputs: list   # (shape, dtype name) per output, in the node's output order
    inputs: list    # the graph nodes it reads, in argument order


def _static(shape):
    return all(isinstance(_sizes.size(d), int) for d in shape)


def max_pool(node, fname, min_work):
    x = node.args[0]
    m = x.meta["val"]
    kw = node.kwargs
    if m.dtype.name not in ("float32", "float64") or not _static(m.shape) or \
            set(kw) != {"ks", "stride", "pad", "dil", "ceil", "need_idx"}:
        return None
    vals = node.meta["val"][0]
    ks, st, pad, dil = (tuple(int(v) for v in kw[k]) for k in ("ks", "stride", "pad", "dil"))
    n = len(ks)
    in_shape = tuple(int(d) for d in m.shape)
    out_shape = tuple(int(d) for d in vals.shape)
    need = bool(kw["need_idx"])
    geometry = (math.prod(in_shape[:-n]),) + in_shape[-n:] + out_shape[-n:] + ks + st + pad \
        + dil + (int(need),)
    src = _pooling.forward_source(fname, pointer_ctype(m.dtype.name), n, geometry,
                                  pragma="EK_PRAGMA", min_work=min_work)
    outputs = [(out_shape, m.dtype.name), (out_shape if need else (0,), "int64")]
    return CExtern(fname, src, outputs, [x])


def max_pool_backward(node, fname, min_work):
    g, idx = node.args[:2]
    gm, im = g.meta["val"], idx.meta["val"]
    in_shape = tuple(int(d) for d in node.kwargs.get("in_shape", ()))
    n = node.kwargs.get("n")
    if gm.dtype.name not in ("float32", "float64") or im.dtype.name != "int64" or \
            not _static(gm.shape) or not in_shape or not isinstance(n, int) or \
            tuple(_shape(idx)) != tuple(_shape(g)):
        return None
    geometry = (math.prod(in_shape[:-n]), math.prod(in_shape[-n:]),
                math.prod(int(d) for d in gm.shape[-n:]))
    src = _pooling.backward_source(fname, pointer_ctype(gm.dtype.name), geometry,
                                   pragma="EK_PRAGMA", min_work=min_work)
    return CExtern(fname, src, [(in_shape, gm.dtype.name)], [g, idx])


C_EXTERNS = {"max_pool": max_pool, "max_pool_backward": max_pool_backward}
