"""Flattening of the nested inputs and outputs a TorchScript program takes and returns.

A program's graph takes and returns flat tuples of tensors; a spec remembers the nesting
(tuples, lists, dicts, None and Python constants) so the caller sees the structure the
original function had.  Specs are plain JSON-able lists so saved programs carry them.
"""
from .._core.tensor import Tensor

__all__ = ["flatten", "unflatten"]

_CONST_TYPES = (bool, int, float, str, type(None))


def flatten(x, out):
    """Append the tensors of ``x`` to ``out``; return ``x``'s spec."""
    if isinstance(x, Tensor):
        out.append(x)
        return ["T"]
    if isinstance(x, tuple):
        return ["tuple", [flatten(v, out) for v in x]]
    if isinstance(x, list):
        return ["list", [flatten(v, out) for v in x]]
    if isinstance(x, dict):
        keys = list(x)
        if not all(isinstance(k, str) for k in keys):
            raise RuntimeError("jit: dicts in a program's inputs or outputs must have str keys, "
                               f"got keys {keys!r}")
        return ["dict", keys, [flatten(x[k], out) for k in keys]]
    if isinstance(x, _CONST_TYPES):
        return ["const", x]
    raise RuntimeError(f"jit: a program's inputs and outputs must be tensors, or tuples, lists, "
                       f"dicts of them, or Python constants; got {type(x).__name__}")


def unflatten(spec, it):
    """Rebuild the structure ``spec`` from iterator ``it`` of tensors."""
    kind = spec[0]
    if kind == "T":
        return next(it)
    if kind == "tuple":
        return tuple(unflatten(s, it) for s in spec[1])
    if kind == "list":
        return [unflatten(s, it) for s in spec[1]]
    if kind == "dict":
        return {k: unflatten(s, it) for k, s in zip(spec[1], spec[2])}
    return spec[1]
