"""Batching rules for the matmul family and nn primitives (linalg and fft ones are their
ops' ``batch`` fields, in ember/ops/linalg and ember/ops/fft).

Most of these kernels already batch over leading dimensions, so the vmap batch
becomes one more leading dimension; conv/pool primitives fold it into N.
"""
from .._core.tensor import Tensor
from ._batching import (BATCH_RULES, _batched_front, _dims_rule, _elementwise_rule,  # noqa: F401
                       _front_padded, _leading_rule, _logical_ndim, _move_to_front,
                       _outs_bdims, _unbatched_empties, add_batch_rule, current_mode)


def _leading_padded_rule(op, args, bdims, params, batch_size):
    """Like `_leading_rule`, with lower-rank operands padded so leading dims broadcast."""
    phys = [_batched_front(a, b, batch_size) if isinstance(a, Tensor) else a
            for a, b in zip(args, bdims)]
    return _outs_bdims(op(*_front_padded(phys, [0 if isinstance(a, Tensor) else None
                                                for a in phys]), **params))


@add_batch_rule("addmm")
def _addmm_rule(op, args, bdims, params, batch_size):
    inp, m1, m2 = args
    kind, beta, alpha = params["kind"], params.get("beta", 1), params.get("alpha", 1)
    a = _batched_front(m1, bdims[1], batch_size)
    b = _batched_front(m2, bdims[2], batch_size)
    if kind == "r":
        p = a.unsqueeze(-1) * b.unsqueeze(-2)
        from ._helpers import promote_np
        from .._core.dtype import FROM_NP
        dt = FROM_NP[promote_np(inp._data, m1._data, m2._data)] if isinstance(inp, Tensor) \
            else p.dtype
    else:
        dt = inp.dtype
        half = dt.itemsize == 2 and dt.is_floating_point
        if half:
            a, b = a.float(), b.float()
        p = (a @ b.unsqueeze(-1)).squeeze(-1) if kind == "mv" else a @ b
        if kind == "addbmm":
            p = p.sum(1)
    if alpha != 1:
        p = p * alpha
    if beta != 0:
        i = inp
        if bdims[0] is not None:
            i = _front_padded([p, inp], [0, bdims[0]])[1]
        i = i.to(p.dtype)
        p = p + (i if beta == 1 else i * beta)
    return p.to(dt), 0


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@add_batch_rule("einsum")
def _einsum_rule(op, args, bdims, params, batch_size):
    eq = params["equation"]
    lhs, out = eq.split("->")
    z = next(c for c in _LETTERS if c not in eq)
    terms = lhs.split(",")
    phys = []
    for t, a, b in zip(terms, args, bdims):
        phys.append(_move_to_front(a, b))
    new = ",".join(z + t if b is not None else t for t, b in zip(terms, bdims))
    return op(*phys, equation=f"{new}->{z}{out}"), 0


@add_batch_rule("cross")
def _cross_rule(op, args, bdims, params, batch_size):
    a, b = _front_padded(list(args[:2]), list(bdims[:2]))
    top = max(_logical_ndim(x, d) for x, d in zip(args[:2], bdims[:2]))
    d = params["dim"]
    return op(a, b, *args[2:], dim=d - top if d >= 0 else d), 0


def _fold_rule(op, args, bdims, params, batch_size):
    """Conv/pool primitives over (N, C, ...): the vmap batch folds into N."""
    x = _batched_front(args[0], bdims[0], batch_size)
    n = x.shape[1]
    phys = [x.reshape((-1,) + tuple(x.shape[2:]))]
    for a, b in zip(args[1:], bdims[1:]):
        if isinstance(a, Tensor):
            a = _batched_front(a, b, batch_size)
            a = a.reshape((-1,) + tuple(a.shape[2:]))
        phys.append(a)
    new = dict(params)
    if "in_shape" in new:
        new["in_shape"] = (batch_size * new["in_shape"][0],) + tuple(new["in_shape"][1:])
    out = op(*phys, **new)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    outs = [o.reshape((batch_size, n) + tuple(o.shape[1:])) if isinstance(o, Tensor) else o
            for o in outs]
    return _outs_bdims(type(out)(outs) if isinstance(out, (tuple, list)) else outs[0])


@add_batch_rule("embedding")
def _embedding_rule(op, args, bdims, params, batch_size):
    w, idx = args
    bw, bi = bdims
    if bw is None:
        return op(w, _move_to_front(idx, bi), **params), 0
    wb = _move_to_front(w, bw)
    i = _batched_front(idx, bi, batch_size)
    shape = tuple(i.shape)
    flat = i.reshape(batch_size, -1, 1).expand(batch_size, i[0].numel(), wb.shape[-1])
    return wb.gather(1, flat).reshape(shape + (wb.shape[-1],)), 0


def _random_nn_rule(op, args, bdims, params, batch_size):
    mode = current_mode()
    if mode.randomness == "error":
        raise RuntimeError("vmap: called random operation while in randomness error mode. "
                           "Please either use the 'same' or 'different' randomness flags on "
                           "vmap or perform the randomness operation out of vmap")
    if mode.randomness == "same":
        raise RuntimeError("vmap: Vmap does not currently support same randomness with a "
                           "batched tensor input. Please file an issue")
    if "shape" in params:
        x = _batched_front(args[0], bdims[0], batch_size)
        return op(x, *args[1:], **dict(params, shape=(batch_size,) + tuple(params["shape"]))), 0
    return _leading_rule(op, args, bdims, params, batch_size)


for _n in ("_lstm_cell", "_gru_cell", "one_hot"):
    BATCH_RULES[_n] = _leading_rule
for _n in ("cdist", "_flash_attention"):
    BATCH_RULES[_n] = _leading_padded_rule
for _n in ("im2col", "col2im", "max_pool", "max_pool_backward", "avg_pool", "adaptive_max_pool"):
    BATCH_RULES[_n] = _fold_rule
for _n in ("native_dropout", "_dropout_mask", "rrelu_with_noise"):
    BATCH_RULES[_n] = _random_nn_rule
BATCH_RULES["_nuc_basis"] = _dims_rule
for _n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit",
           "threshold_backward", "_to_device"):
    BATCH_RULES[_n] = _elementwise_rule
BATCH_RULES["pad"] = _leading_rule
