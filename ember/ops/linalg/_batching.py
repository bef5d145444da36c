"""Batching (vmap) rules of the linalg operators, their ``batch=`` fields.

LAPACK-backed kernels already broadcast over leading batch dimensions, so the vmap batch
becomes one more leading dimension; operands of lower rank are padded so that their
logical batch dimensions line up.
"""
from ..._core.tensor import Tensor
from .._batching import _batched_front, _logical_ndim, _unbatched_empties

__all__ = ["_linalg_rule", "_solve_rule"]


def _linalg_rule(op, args, bdims, params, batch_size, vector_args=()):
    """Linalg kernels broadcast the batch dims of their matrix operands: the vmap batch in
    front, lower-rank matrix operands padded so the logical batch dims line up.
    ``vector_args`` are the positions of operands that are not matrices (pivots)."""
    mats = [i for i, a in enumerate(args) if isinstance(a, Tensor) and i not in vector_args]
    top = max((_logical_ndim(args[i], bdims[i]) for i in mats), default=0)
    phys = []
    for i, (a, b) in enumerate(zip(args, bdims)):
        if isinstance(a, Tensor):
            a = _batched_front(a, b, batch_size)
            if i in mats and a.dim() - 1 < top:
                a = a.reshape((batch_size,) + (1,) * (top - a.dim() + 1) + tuple(a.shape[1:]))
        phys.append(a)
    return _unbatched_empties(op(*phys, **params), batch_size)


def _vector_args_rule(*positions):
    """`_linalg_rule` for an op whose operands at ``positions`` are vectors (pivots)."""
    def rule(op, args, bdims, params, batch_size):
        return _linalg_rule(op, args, bdims, params, batch_size, positions)
    return rule


def _solve_rule(op, args, bdims, params, batch_size):
    """A right-hand side that is logically a vector becomes a one-column matrix."""
    a, b = args
    la, lb = _logical_ndim(a, bdims[0]), _logical_ndim(b, bdims[1])
    lb_shape = tuple(b.shape[:bdims[1]]) + tuple(b.shape[bdims[1] + 1:]) \
        if bdims[1] is not None else tuple(b.shape)
    la_shape = tuple(a.shape[:bdims[0]]) + tuple(a.shape[bdims[0] + 1:]) \
        if bdims[0] is not None else tuple(a.shape)
    vector = lb == 1 or (lb == la - 1 and lb_shape == la_shape[:-1])
    if not vector:
        return _linalg_rule(op, args, bdims, params, batch_size)
    bb = _batched_front(b, bdims[1], batch_size).unsqueeze(-1)
    x, info = _linalg_rule(op, [a, bb], [bdims[0], 0], params, batch_size)[0]
    return (x.squeeze(-1), info), [0, 0]
