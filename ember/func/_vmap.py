"""``vmap``: vectorizing map over a batch dimension (``torch.func.vmap``).

The mechanics live in ``ember.func._vmap_mode`` (batched tensors, the dispatch
mode) and ``ember.ops._batching`` (the rules); this module handles ``in_dims``/``out_dims`` pytrees,
batch-size checks, ``chunk_size`` and ``randomness``.
"""
import functools
import itertools

from .._core.tensor import Tensor
from ._vmap_mode import BatchedTensor, VmapMode, make_batched
from ._pytree import tree_flatten, tree_unflatten

__all__ = ["vmap"]

_level_counter = itertools.count(1)


def _fname(func):
    return getattr(func, "__name__", repr(func))


def _broadcast_dims(dims, spec, what, func):
    if isinstance(dims, int) or dims is None:
        return [dims] * spec.num_leaves
    flat, dspec = tree_flatten(dims)
    if dspec == spec:
        return flat
    # a prefix tree: each entry applies to a whole subtree
    if spec.kind in ("tuple", "list") and isinstance(dims, (tuple, list)) and \
            len(dims) == len(spec.children):
        out = []
        for d, child in zip(dims, spec.children):
            out.extend(_broadcast_dims(d, child, what, func))
        return out
    if spec.kind == "dict" and isinstance(dims, dict) and set(dims) == set(spec.meta):
        out = []
        for k, child in zip(spec.meta, spec.children):
            out.extend(_broadcast_dims(dims[k], child, what, func))
        return out
    raise ValueError(f"vmap({_fname(func)}, {what}={dims}, ...)(<inputs>): {what} is not "
                     f"compatible with the structure of `inputs`.")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorizing map: returns a function that runs ``func`` over dimension ``in_dims`` of
    its inputs as if for each example separately, stacking results along ``out_dims``."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if isinstance(in_dims, (tuple, list)) and len(in_dims) != len(args) and \
                not isinstance(in_dims, int):
            raise ValueError(f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims "
                             f"is not compatible with the structure of `inputs`. in_dims has "
                             f"structure {type(in_dims).__name__} of length {len(in_dims)} but "
                             f"inputs has structure tuple of length {len(args)}.")
        flat, spec = tree_flatten(tuple(args))
        dims = _broadcast_dims(tuple(in_dims) if isinstance(in_dims, list) else in_dims,
                               spec, "in_dims", func)
        sizes = []
        for x, d in zip(flat, dims):
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, please "
                                 f"use None as the respective in_dim")
            if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
                raise ValueError(f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.dim()} so expected in_dim to satisfy "
                                 f"-{x.dim()} <= in_dim < {x.dim()}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"vmap({_fname(func)}, in_dims={in_dims}, ...)(<inputs>): at least "
                             f"one input must be a Tensor with an in_dim that is not None")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        batch = sizes[0]
        if chunk_size is None or chunk_size >= batch:
            return _run(func, flat, spec, dims, kwargs, batch)[0]
        pieces = []
        for start in range(0, batch, chunk_size):
            n = min(chunk_size, batch - start)
            part = [x.narrow(d, start, n) if d is not None else x for x, d in zip(flat, dims)]
            pieces.append(_run(func, part, spec, dims, kwargs, n))
        return _concat_chunks(pieces)

    def _run(func, flat, spec, dims, kwargs, batch):
        level = next(_level_counter)
        with VmapMode(level, batch, randomness):
            wrapped_in = [make_batched(x, d % x.dim(), level) if d is not None else x
                          for x, d in zip(flat, dims)]
            out = func(*tree_unflatten(wrapped_in, spec), **kwargs)
        oflat, ospec = tree_flatten(out)
        odims = _broadcast_dims(out_dims, ospec, "out_dims", func)
        result = []
        for o, d in zip(oflat, odims):
            if not isinstance(o, Tensor):
                raise ValueError(f"vmap({_fname(func)}, ...): `{_fname(func)}` must only return "
                                 f"Tensors, got type {type(o)}. Did you mean to set out_dims= "
                                 f"to None for output?")
            if isinstance(o, BatchedTensor) and o._level == level:
                v = o._value
                if d is None:
                    raise ValueError(f"vmap({_fname(func)}, ...): `{_fname(func)}` can not "
                                     f"return a BatchedTensor when out_dim is None")
                result.append(v.movedim(o._bdim, d % v.dim()))
            elif d is None:
                result.append(o)
            else:
                e = o.unsqueeze(0).expand(batch, *o.shape)
                result.append(e.movedim(0, d % e.dim()))
        return tree_unflatten(result, ospec), ospec, odims

    def _concat_chunks(pieces):
        from ..ops.shape import cat
        ospec, odims = pieces[0][1], pieces[0][2]
        flats = [tree_flatten(p[0])[0] for p in pieces]
        out = [cat([f[i] for f in flats], dim=d) if d is not None else flats[0][i]
               for i, d in enumerate(odims)]
        return tree_unflatten(out, ospec)

    return wrapped
