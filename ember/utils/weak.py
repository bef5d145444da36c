"""Weak references keyed by object identity (``torch.utils.weak``).

Tensors define ``__eq__`` elementwise and are unhashable by value, so a
``weakref.WeakKeyDictionary`` cannot hold them; these containers compare keys by ``id``
and drop an entry when its key dies."""
import weakref
from collections.abc import MutableMapping

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]


class WeakIdRef(weakref.ref):
    """A weak reference hashed and compared by the referent's identity (stable after the
    referent dies)."""
    __slots__ = ("_id",)

    def __init__(self, key, callback=None):
        self._id = id(key)
        super().__init__(key, callback)

    def __call__(self):
        return super().__call__()

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other


class _StrongIdRef:
    """A lookup key with WeakIdRef's hash and equality, without making a weakref."""
    __slots__ = ("_obj", "_id")

    def __init__(self, obj):
        self._obj, self._id = obj, id(obj)

    def __call__(self):
        return self._obj

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        return self._obj is other()


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity."""

    def __init__(self, dict=None, ref_type=WeakIdRef):
        self.data = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(k, selfref=self_ref):
            d = selfref()
            if d is not None:
                d.data.pop(k, None)
        self._remove = remove
        if dict is not None:
            self.update(dict)

    def __getitem__(self, key):
        return self.data[_StrongIdRef(key)]

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key):
        del self.data[_StrongIdRef(key)]

    def __contains__(self, key):
        return _StrongIdRef(key) in self.data

    def __iter__(self):
        for ref in list(self.data):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self):
        return sum(1 for ref in list(self.data) if ref() is not None)

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    def copy(self):
        return type(self)(dict(self.items()), self.ref_type)

    __copy__ = copy

    def keyrefs(self):
        return list(self.data)


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor; calling it returns the tensor or None."""
    __slots__ = ("ref",)

    def __init__(self, tensor):
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()
