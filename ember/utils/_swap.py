"""``torch.utils.swap_tensors`` and ``torch.utils.set_module``."""

__all__ = ["set_module", "swap_tensors"]


def set_module(obj, mod):
    """Set ``obj.__module__`` to ``mod`` (the public module a name is documented under)."""
    if not isinstance(mod, str):
        raise TypeError("The mod argument should be a string")
    obj.__module__ = mod


def swap_tensors(t1, t2):
    """Swap everything two tensors are -- data, class, gradient, attributes -- in place, so
    every existing reference to ``t1`` now sees what ``t2`` was, and the reverse.

    ember keeps all of a tensor's state in its instance dict, so swapping the dicts and
    the classes swaps the tensors completely."""
    from .._core.tensor import Tensor
    if not isinstance(t1, Tensor) or not isinstance(t2, Tensor):
        raise TypeError(f"Expected 2 tensors, got {type(t1).__name__} and "
                        f"{type(t2).__name__}")
    if t1 is t2:
        return
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
