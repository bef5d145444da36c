"""Parameter, Buffer and UninitializedParameter.

A Parameter is a Tensor subclass (a leaf that requires grad by default) that
Modules register automatically when assigned as attributes.
"""
import numpy as np

from .._core.tensor import Tensor, wrap

__all__ = ["Parameter", "Buffer", "UninitializedTensorMixin", "UninitializedParameter",
           "UninitializedBuffer", "is_lazy"]


class Parameter(Tensor):
    """A kind of Tensor that is to be considered a module parameter."""
    _is_param = True

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = wrap(np.empty((0,), dtype=np.float32))
        t = object.__new__(cls)
        t._data = data._data
        if data._vc is not None or data._base is not None:
            from .._core.tensor import _version_of
            t._vc = _version_of(data)
        t._requires_grad = False
        if requires_grad:
            t._set_requires_grad(True)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self._requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = type(self)(wrap(self._data.copy()), self._requires_grad)
        if self._grad is not None:
            r._grad = wrap(self._grad._data.copy())
        memo[id(self)] = r
        return r


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """A kind of Tensor that a Module registers as a buffer when assigned as an attribute.

    ``Buffer(data, persistent=True)``: non-persistent buffers are left out of state_dict."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = wrap(np.empty((0,), dtype=np.float32))
        t = wrap(data._data)
        t.persistent = persistent
        t._is_buffer_marker = True
        return t


class UninitializedTensorMixin:
    """What uninitialized parameters and buffers share: no data until ``materialize``."""
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Create this tensor's storage with ``shape`` and turn it into ``cls_to_become``."""
        from .._core import dtype as _dt
        d = dtype or getattr(self, "_lazy_dtype", None) or _dt.get_default_dtype()
        self._data = np.empty(tuple(shape), dtype=d.np)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This "
                           "error usually happens in `load_state_dict` when trying to load an "
                           "uninitialized parameter into an initialized one. Call `forward` to "
                           "initialize the parameters before accessing their attributes.")

    def numel(self):
        return self.shape

    def __repr__(self):
        return f"<{self.__class__.__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (used by Lazy modules)."""
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        t = Parameter.__new__(cls, wrap(np.empty((0,), dtype=np.float32)), requires_grad)
        t._lazy_dtype = dtype
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (used by Lazy modules)."""
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = wrap(np.empty((0,), dtype=np.float32))
        t.__class__ = cls
        t._lazy_dtype = dtype
        t.persistent = persistent
        if requires_grad:
            t._set_requires_grad(True)
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


def is_lazy(param):
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
