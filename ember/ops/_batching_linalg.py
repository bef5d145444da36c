"""Batching rules for nn primitives (linalg and fft ones are their
ops' ``batch`` fields, in ember/ops/linalg and ember/ops/fft).

Most of these kernels already batch over leading dimensions, so the vmap batch
becomes one more leading dimension; conv/pool primitives fold it into N.
"""
from .._core.tensor import Tensor
from ._batching import (BATCH_RULES, _batched_front, _dims_rule, _elementwise_rule,  # noqa: F401
                       _front_padded, _leading_padded_rule, _leading_rule, _logical_ndim,
                       _move_to_front, _outs_bdims, _unbatched_empties, add_batch_rule,
                       current_mode)


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
BATCH_RULES["_flash_attention"] = _leading_padded_rule
for _n in ("im2col", "col2im", "max_pool", "max_pool_backward", "avg_pool", "adaptive_max_pool"):
    BATCH_RULES[_n] = _fold_rule
for _n in ("native_dropout", "_dropout_mask", "rrelu_with_noise"):
    BATCH_RULES[_n] = _random_nn_rule
BATCH_RULES["threshold_backward"] = _elementwise_rule
BATCH_RULES["pad"] = _leading_rule
