"""Batching rules of the shape and indexing operators (ember/ops/shape.py, indexing.py),
and those shared by several op files, which set them as their ops' ``batch`` fields.

Rules run on physical tensors (batch dim ``bdims[i]``) and may only call ember
operators, so nested vmap levels and autograd (recorded at the logical level)
compose.  Index-based writes become gathers/scatters along a leading batch dim.
"""
import numpy as np

from .._core.tensor import Tensor
from ._batching import (_batched_front, _dims_rule, _front_padded,
                       _logical_ndim, _move_to_front, _op, _shift_dims)


def _dynamic_shape_error(op):
    raise RuntimeError(f"vmap: We do not support batching operators that can output dynamic "
                       f"shape. Attempted to vmap over ember.ops.{op.name}. Its per-example "
                       f"outputs have data-dependent sizes.")


def _dynamic_rule(op, args, bdims, params, batch_size):
    _dynamic_shape_error(op)


def _pos(d, n):
    return d % n if n else 0


def _vec_idx(idx, n):
    """Negative indices wrapped, as ember ops on tensors."""
    return idx + (idx < 0).long() * n if idx.numel() else idx


# ---- reductions over everything / scans -------------------------------------------------------

def _arg_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    if params.get("dim") is not None:
        return _dims_rule(op, args, bdims, params, batch_size)
    r = op(x.reshape(batch_size, -1), dim=1, keepdim=False)
    if params.get("keepdim"):
        r = r.reshape((batch_size,) + (1,) * (x.dim() - 1))
    return r, 0


def _roll_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    if not params["dims"]:  # the flattened tensor
        flat = x.reshape(batch_size, -1)
        return op(flat, shifts=params["shifts"], dims=(1,)).reshape(tuple(x.shape)), 0
    return op(x, shifts=params["shifts"], dims=tuple(d + 1 for d in params["dims"])), 0


def _repeat_rule(op, args, bdims, params, batch_size):
    x = _move_to_front(args[0], bdims[0])
    sizes = tuple(params["sizes"])
    pad = len(sizes) - (x.dim() - 1)
    x = x.reshape((batch_size,) + (1,) * pad + tuple(x.shape[1:]))
    return op(x, sizes=(1,) + sizes), 0


def _repeat_interleave_rule(op, args, bdims, params, batch_size):
    if len(bdims) > 1 and bdims[1] is not None:
        _dynamic_shape_error(op)
    x = _move_to_front(args[0], bdims[0])
    if params["flat"]:
        return op(x.reshape(batch_size, -1), *args[1:], **dict(params, dim=1, flat=False)), 0
    return op(x, *args[1:], **dict(params, dim=params["dim"] + 1)), 0


def _tri_rule(op, args, bdims, params, batch_size):
    return op(_move_to_front(args[0], bdims[0]), *args[1:], **params), 0


def _backward_with_shape_rule(op, args, bdims, params, batch_size):
    g = _move_to_front(args[0], bdims[0])
    key = "in_shape" if "in_shape" in params else "shape"
    new = _shift_dims(params) if op.name != "pad_backward" else dict(params)
    new[key] = (batch_size,) + tuple(params[key])
    return op(g, *args[1:], **new), 0


def _stack_rule(op, args, bdims, params, batch_size):
    phys = [_batched_front(a, b, batch_size) for a, b in zip(args, bdims)]
    d = params["dim"]
    return op(*phys, dim=d + 1 if d >= 0 else d), 0


def _cat_rule(op, args, bdims, params, batch_size):
    keep = [i for i, a in enumerate(args) if tuple(a.shape[:bdims[i]] if bdims[i] is not None
                                                    else a.shape) + tuple(
        a.shape[bdims[i] + 1:] if bdims[i] is not None else ()) != (0,)]
    if not keep:
        keep = list(range(len(args)))
    phys = [_batched_front(args[i], bdims[i], batch_size) for i in keep]
    sizes = tuple(params["sizes"][i] for i in keep) if params.get("sizes") else params["sizes"]
    d = params["dim"]
    return op(*phys, dim=d + 1 if d >= 0 else d, sizes=sizes), 0


# ---- gather / scatter family -----------------------------------------------------------------

def _along(idx, d, shape):
    """(B, k) indices for dim ``d`` of a (B, *shape) tensor, expanded to gather/scatter form."""
    k = idx.shape[1]
    n = len(shape)
    idx = idx.reshape((idx.shape[0],) + (1,) * d + (k,) + (1,) * (n - d - 1))
    return idx.expand(*((idx.shape[0],) + tuple(shape[:d]) + (k,) + tuple(shape[d + 1:])))


def _index_select_rule(op, args, bdims, params, batch_size):
    x, idx = args
    bx, bi = bdims
    n = _logical_ndim(x, bx)
    if n == 0:
        return _dims_rule(op, args, bdims, params, batch_size)
    d = _pos(params["dim"], n)
    if bi is None:
        return op(_move_to_front(x, bx), idx, dim=d + 1), 0
    xb = _batched_front(x, bx, batch_size)
    i = _vec_idx(_move_to_front(idx, bi).reshape(batch_size, -1), xb.shape[d + 1])
    return _op("gather")(xb, _along(i, d, tuple(xb.shape[1:])), dim=d + 1), 0


def _index_write_rule(op, args, bdims, params, batch_size):
    x, idx, src = args[0], args[1], args[2]
    bx, bi, bs = bdims[0], bdims[1], bdims[2]
    n = _logical_ndim(x, bx)
    xb = _batched_front(x, bx, batch_size)
    if n == 0:
        xb = xb.unsqueeze(1)
    d = _pos(params["dim"], max(n, 1))
    shape = tuple(xb.shape[1:])
    i = _vec_idx(_batched_front(idx, bi, batch_size).reshape(batch_size, -1), shape[d])
    ie = _along(i, d, shape)
    kind = op.name[6:]
    if kind == "fill":
        if isinstance(src, Tensor):
            v = _batched_front(src, bs, batch_size).to(xb.dtype).reshape(
                (batch_size,) + (1,) * len(shape))
            vals = v.expand(*ie.shape)
        else:
            vals = xb.new_full(tuple(ie.shape), src)
    else:
        vals = _batched_front(src, bs, batch_size)
        if n == 0:
            vals = vals.reshape(batch_size, 1)
        vals = vals.reshape(tuple(ie.shape))
        if kind == "add" and params.get("alpha", 1) != 1:
            vals = vals * params["alpha"]
    r = (_op("scatter_add") if kind == "add" else _op("scatter"))(xb, ie, vals, dim=d + 1)
    return (r.squeeze(1) if n == 0 else r), 0


def _masked_fill_rule(op, args, bdims, params, batch_size):
    x, rest = _batched_front(args[0], bdims[0], batch_size), args[1:]
    n = x.dim() - 1
    padded = _front_padded([x] + list(rest), [0] + list(bdims[1:]), pad_to=n)
    return op(*padded, **params), 0


def _masked_scatter_rule(op, args, bdims, params, batch_size):
    x = _batched_front(args[0], bdims[0], batch_size)
    n = x.dim() - 1
    mask = _front_padded([x, args[1]], [0, bdims[1]], pad_to=n)[1]
    mask = mask.expand(*x.shape) if bdims[1] is not None else mask.expand(*x.shape[1:]).unsqueeze(
        0).expand(*x.shape)
    src = _batched_front(args[2], bdims[2], batch_size).reshape(batch_size, -1)
    if src.shape[1] == 0:
        return x.clone(), 0
    mf = mask.reshape(batch_size, -1)
    pos = (mf.long().cumsum(1) - 1).clamp(0, src.shape[1] - 1)
    picked = src.gather(1, pos)
    return _op("where")(mf, picked, x.reshape(batch_size, -1)).reshape(tuple(x.shape)), 0


def _take_rule(op, args, bdims, params, batch_size):
    x = _batched_front(args[0], bdims[0], batch_size).reshape(batch_size, -1)
    idx = _batched_front(args[1], bdims[1], batch_size)
    shape = tuple(idx.shape)
    i = _vec_idx(idx.reshape(batch_size, -1), x.shape[1])
    if x.shape[1] == 0 or i.shape[1] == 0:
        return x.new_zeros(shape) if i.shape[1] == 0 else op(x[0], args[1]), 0
    return x.gather(1, i).reshape(shape), 0


def _put_rule(op, args, bdims, params, batch_size):
    x = _batched_front(args[0], bdims[0], batch_size)
    xf = x.reshape(batch_size, -1)
    i = _vec_idx(_batched_front(args[1], bdims[1], batch_size).reshape(batch_size, -1),
                 xf.shape[1])
    src = _batched_front(args[2], bdims[2], batch_size).reshape(batch_size, -1)
    fn = _op("scatter_add") if params.get("accumulate") else _op("scatter")
    return fn(xf, i, src, dim=1).reshape(tuple(x.shape)), 0


def _adv_layout(x_lnd, indices, bidx):
    """Batched advanced-indexing key: (new indices, broadcast index shape, first position,
    whether torch would put the index dims in place)."""
    pos = [i for i, t in enumerate(indices) if t is not None]
    shapes = [tuple(t.shape[:b]) + tuple(t.shape[b + 1:]) if b is not None else tuple(t.shape)
              for t, b in zip(indices, bidx) if t is not None]
    rshape = tuple(np.broadcast_shapes(*shapes))
    in_place = pos == list(range(pos[0], pos[-1] + 1))
    return pos, rshape, in_place


def _bool_to_int(indices, bidx, op):
    out, ob = [], []
    for t, b in zip(indices, bidx):
        if isinstance(t, Tensor) and t.dtype.name == "bool":
            if b is not None:
                _dynamic_shape_error(op)
            out.extend(_op("nonzero")(t).unbind(1))
            ob.extend([None] * t.dim())
        else:
            out.append(t)
            ob.append(b)
    return out, ob


def _batched_key(x, indices, bidx, batch_size, op):
    indices, bidx = _bool_to_int(list(indices), list(bidx), op)
    pos, rshape, in_place = _adv_layout(x.dim() - 1, indices, bidx)
    r = len(rshape)
    from .creation import arange
    ar = arange(batch_size).reshape((batch_size,) + (1,) * r)
    key = [ar]
    for t, b in zip(indices, bidx):
        if t is None or b is None:
            key.append(t)
        else:
            t = _move_to_front(t, b)
            key.append(t.reshape((batch_size,) + (1,) * (r - t.dim() + 1) + tuple(t.shape[1:])))
    moved = in_place and pos[0] > 0
    return key, rshape, pos, moved


def _index_rule(op, args, bdims, params, batch_size):
    x = _batched_front(args[0], bdims[0], batch_size)
    key, rshape, pos, moved = _batched_key(x, args[1:], bdims[1:], batch_size, op)
    p = pos[0]
    out = op(x, *key)
    if moved:
        out = out.movedim(tuple(range(1, 1 + len(rshape))), tuple(range(1 + p, 1 + p + len(rshape))))
    return out, 0


def _masked_put(op, x, values, bv, mask, bm, params, batch_size):
    """``x[mask] = v`` with a per-example mask and a one-element value: a where."""
    n = x.dim() - 1
    m = _batched_front(mask, bm, batch_size)
    m = m.reshape(tuple(m.shape) + (1,) * (n - m.dim() + 1))
    if isinstance(values, Tensor):
        v = _batched_front(values, bv, batch_size)
        v = v.reshape((batch_size,) + (1,) * (n - v.dim() + 1) + tuple(v.shape[1:])).to(x.dtype)
    else:
        v = values
    if params.get("accumulate"):
        return x + m.to(x.dtype) * v, 0
    return _op("where")(m, v, x), 0


def _index_put_rule(op, args, bdims, params, batch_size):
    x = _batched_front(args[0], bdims[0], batch_size)
    values, bv = args[1], bdims[1]
    idx = args[2:]
    if len(idx) == 1 and isinstance(idx[0], Tensor) and idx[0].dtype.name == "bool" and \
            bdims[2] is not None and (not isinstance(values, Tensor) or
                                      _logical_ndim(values, bv) <= x.dim() - 1 -
                                      _logical_ndim(idx[0], bdims[2])):
        # values broadcast over the selected elements: the count never matters
        return _masked_put(op, x, values, bv, idx[0], bdims[2], params, batch_size)
    key, rshape, npos, moved = _batched_key(x, args[2:], bdims[2:], batch_size, op)
    p = npos[0]
    if isinstance(values, Tensor):
        xl = tuple(x.shape[1:])
        rest_before, rest_after = xl[:npos[0]], xl[npos[0] + len(npos):]
        if moved:
            lshape = rest_before + rshape + rest_after
        else:
            lshape = rshape + tuple(s for i, s in enumerate(xl) if i not in npos)
        v = _batched_front(values, bv, batch_size)
        v = v.reshape((batch_size,) + (1,) * (len(lshape) - v.dim() + 1) + tuple(v.shape[1:]))
        v = v.expand(*((batch_size,) + lshape))
        if moved:
            k = len(rshape)
            v = v.movedim(tuple(range(1 + p, 1 + p + k)), tuple(range(1, 1 + k)))
        values = v
    return op(x, values, *key, **params), 0
