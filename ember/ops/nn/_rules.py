"""Batching rules shared by several nn operators (each op names its own in ``batch=``).

Most nn kernels treat every dimension before the ones they work on as batch, so the
vmap batch simply becomes one more leading dimension (`leading_rule`); random ones
also consult the vmap level's ``randomness`` flag (`random_rule`).
"""
from ..._core.tensor import Tensor
from .._batching import _batched_front, current_mode


def front_all(args, bdims, batch_size):
    """Every tensor argument with the vmap batch in front (materialised where missing)."""
    return [_batched_front(a, b, batch_size) if isinstance(a, Tensor) else a
            for a, b in zip(args, bdims)]


def outs_at_front(out):
    if isinstance(out, (tuple, list)):
        return out, [0 if isinstance(o, Tensor) else None for o in out]
    return out, 0


def leading_rule(op, args, bdims, params, batch_size):
    """Kernels batched over leading dims: the vmap batch in front of every tensor."""
    return outs_at_front(op(*front_all(args, bdims, batch_size), **params))


def random_rule(op, args, bdims, params, batch_size):
    """Random nn kernels: one independent draw per example ('different'); torch's errors for
    'error' and 'same' with a batched input."""
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
    return leading_rule(op, args, bdims, params, batch_size)
