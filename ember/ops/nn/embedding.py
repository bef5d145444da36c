"""The embedding primitives: ``embedding`` (a row gather whose derivative is an index_add
into the weight's shape, with padding_idx and scale_grad_by_freq) and ``one_hot``."""
import numpy as np

from ..._core import dtype as _dt
from ..._core import meta as _meta
from ..._core.op import Op
from .._batching import _batched_front, _move_to_front
from .._helpers import type_name
from ..pointwise import where
from ..sorting import bincount
from ._rules import leading_rule

__all__ = []


def _check_indices(idx, what="embedding"):
    if idx.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got ember."
                           f"{type_name(idx.dtype)}Tensor instead (while checking arguments "
                           f"for {what})")


def _embedding_kernel(xp, w, idx, *, padding_idx, scale_freq):
    _check_indices(idx)
    n = w.shape[0]
    if idx.size and (idx.min() < -n or idx.max() >= n or idx.min() < 0):
        raise IndexError("index out of range in self")
    return w[idx]


def _embedding_vjp(ctx, g, w, idx, *, padding_idx, scale_freq):
    shape = ctx.in_meta[0][0]
    flat = idx.reshape(-1)
    g2 = g.reshape(-1, shape[1])
    if padding_idx >= 0:
        g2 = where((flat == padding_idx).unsqueeze(1), 0, g2)
    if scale_freq:
        counts = bincount(flat, minlength=shape[0])
        g2 = g2 / counts[flat].unsqueeze(1).to(g2.dtype)
    return g.new_zeros(tuple(shape)).index_add(0, flat, g2), None


def _embedding_batch(op, args, bdims, params, batch_size):
    w, idx = args
    bw, bi = bdims
    if bw is None:
        return op(w, _move_to_front(idx, bi), **params), 0
    # per-example tables: gather each example's rows from its own table
    wb = _move_to_front(w, bw)
    i = _batched_front(idx, bi, batch_size)
    shape = tuple(i.shape)
    flat = i.reshape(batch_size, -1, 1).expand(batch_size, i[0].numel(), wb.shape[-1])
    return wb.gather(1, flat).reshape(shape + (wb.shape[-1],)), 0


EMBEDDING = Op("embedding", _embedding_kernel, _embedding_vjp, save_inputs=(1,),
               shape=lambda w, idx, **p: (tuple(idx.shape) + tuple(w.shape[1:]), w.dtype),
               category="nn", batch=_embedding_batch)


def _embedding_jvp(out, ts, w, idx, **params):
    # linear in the table: the rows of its tangent; the padding row is a constant (its
    # gradient is 0), so its rows carry no tangent
    if ts[0] is None:
        return None
    t = EMBEDDING(ts[0], idx, **params)
    if params["padding_idx"] >= 0:
        t = where((idx == params["padding_idx"]).unsqueeze(-1), 0, t)
    return t


EMBEDDING.jvp = _embedding_jvp


def _one_hot_kernel(xp, x, num_classes):
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if x.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max()) + 1
    if x.size and x.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if x.size and x.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    # zeros and one flat store per index: ~5x faster than comparing against every class
    out = xp.zeros(x.shape + (num_classes,), np.int64)
    if x.size:
        out.reshape(-1)[xp.arange(x.size) * num_classes + x.reshape(-1)] = 1
    return out


def _one_hot_shape(x, num_classes):
    if num_classes == -1:
        raise _meta.DataDependentShape("one_hot infers the number of classes from the values")
    return x.shape + (num_classes,), _dt.int64


ONE_HOT = Op("one_hot", _one_hot_kernel, None, differentiable=False, category="nn",
             shape=_one_hot_shape, batch=leading_rule)


