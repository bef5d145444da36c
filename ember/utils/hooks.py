"""Hook handles shared by modules, tensors and optimizers (``torch.utils.hooks``)."""
import warnings
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


class RemovableHandle:
    """A handle which provides the capability to remove a hook.

    ``hooks_dict`` is the dict the hook was stored in under ``handle.id``; ``extra_dict``
    (a dict or a list of dicts) holds per-hook flags under the same id, removed with it.
    The dicts are held weakly, so a handle does not keep its module alive."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = extra_dict if isinstance(extra_dict, list) else \
            ([] if extra_dict is None else [extra_dict])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        if self.extra_dict_ref:
            return (self.hooks_dict_ref(), self.id,
                    tuple(ref() for ref in self.extra_dict_ref))
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state):
        # a handle unpickled without its dict removes nothing
        self.hooks_dict_ref = weakref.ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extras = state[2] if len(state) > 2 else ()
        self.extra_dict_ref = tuple(weakref.ref(OrderedDict() if d is None else d)
                                    for d in extras)

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


def unserializable_hook(f):
    """Mark ``f`` as a hook that need not survive serialization (silences
    ``warn_if_has_hooks`` for it)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn when ``tensor`` carries backward hooks that pickling will drop."""
    hooks = getattr(tensor, "_backward_hooks", None) or {}
    for hook in hooks.values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this "
                          "is expected, you can decorate the function with "
                          "@torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
