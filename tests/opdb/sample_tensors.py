"""A sample's tensors as a flat list and back: how the op database runs a record as a
function of its tensor arguments (through compile, export and the lite runtime)."""
from ember._core.tensor import Tensor

__all__ = ["tensor_leaves", "rebuild", "flat_tensors"]


def tensor_leaves(a, out):
    """Append the tensors of ``a`` (nested lists/tuples) to ``out``, in order."""
    if isinstance(a, Tensor):
        out.append(a)
    elif isinstance(a, (list, tuple)):
        for x in a:
            tensor_leaves(x, out)


def rebuild(a, it):
    """``a`` with its tensors replaced, in order, by the items of iterator ``it``."""
    if isinstance(a, Tensor):
        return next(it)
    if isinstance(a, (list, tuple)):
        return type(a)(rebuild(x, it) for x in a)
    return a


def flat_tensors(o):
    """The tensors of output ``o`` as a list, or None if it holds anything else."""
    if isinstance(o, Tensor):
        return [o]
    if isinstance(o, (list, tuple)):
        out = []
        for x in o:
            f = flat_tensors(x)
            if f is None:
                return None
            out += f
        return out
    return None
