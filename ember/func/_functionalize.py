"""``functionalize``: a function's results without its side effects on the caller's tensors
beyond torch's (input mutations written back once, outputs never aliasing inputs)."""
import functools

from .._core.tensor import Tensor
from ._pytree import tree_map
from ._vmap_mode import BatchedTensor

__all__ = ["functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func, *, remove="mutations"):
    """Returns a version of ``func`` with the semantics of a program without mutation.

    The returned function computes ``func``'s results; mutations ``func`` makes to its
    tensor inputs (directly or through views) are applied to those inputs once, after it
    returns, and no output aliases an input.  ember's transforms (vmap, grad, jvp) and its
    compiler handle in-place operators themselves, so ``func`` runs on private copies of its
    tensor inputs, in place where it writes in place; the copies of inputs it mutated are
    then copied back.

    ``remove``: ``'mutations'`` or ``'mutations_and_views'`` (outputs are never views of
    the inputs with either, as in torch)."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove="
            f"{remove}. Valid options are:\n     remove='mutations': all inplace and out= "
            f"operators will be removed from the program, and replaced with their out-of-place "
            f"equivalents.\n     remove='mutations_and_views': In addition to the above, all "
            f"aliasing operators {{view}} will be replaced with their non-aliasing "
            f"counterparts, {{view}}_copy.\n")

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        copies = {}  # id(input) -> (input, its private copy, the copy's version)

        def private(x):
            if not isinstance(x, Tensor):
                return x
            if id(x) not in copies:  # one copy per input tensor: repeated arguments alias
                c = x.clone()
                copies[id(x)] = (x, c, _version(c))
            return copies[id(x)][1]
        out = func(*tree_map(private, args), **tree_map(private, kwargs))
        for orig, copy, version in copies.values():
            if _version(copy) != version:
                orig.copy_(copy)
        return out
    return functionalized


def _version(t):
    """The version counter of ``t``'s storage (under vmap, its physical tensor's)."""
    while isinstance(t, BatchedTensor):
        t = t._value
    return t._version
