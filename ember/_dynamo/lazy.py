"""Lazy tensors: the results of captured operations, before their graph has run.

Inside a compiled region an operator's result is an ordinary ember Tensor object whose
class is temporarily a *lazy* subclass of its own class (``Tensor``, ``Parameter``, ...):
its metadata (shape, dtype, requires_grad) is known from the op's shape rule, its values
are not.  ``_data`` reads as a `LazyArray` that answers metadata (``shape``, ``dtype``,
``ndim``, ``size``, ``itemsize``, ``nbytes``) without running anything; any other use of the
array (its values, strides, NumPy calls) is a point where Python needs the data, so the
pending graph runs (``flush``) and the request goes to the real array.  Reading ``grad_fn``
flushes too: autograd history is attached when the graph runs.  After the flush the object's
class is its own again and it is an ordinary tensor with no overhead, the same object the
user holds.

A real tensor that a captured in-place op writes to becomes lazy the same way until the
graph runs and the new value is written back into its memory.
"""
import numpy as np

from .._core.array_meta import ArrayMeta
from .._core.state import STATE
from .._core.tensor import Tensor

__all__ = ["LazyArray", "lazy_class", "is_lazy", "LazyRef"]


class LazyRef:
    """Where a lazy tensor's current value lives: ``trace`` and value index ``index``.

    ``view``: ``(root, chain, root_version)`` when the value is a view of ``root`` (a lazy or
    real tensor) by the view ops ``chain``: after the graph runs, the view is derived from
    the root again, so it aliases it as in eager mode.  ``original``: the class to restore.
    """
    __slots__ = ("trace", "index", "view", "original", "proxy", "real_data")  # proxy: unused

    def __init__(self, trace, index, original, view=None, real_data=None):
        self.trace = trace
        self.index = index
        self.original = original
        self.view = view
        self.proxy = None
        self.real_data = real_data  # a mutated real tensor's own array (written back)


class LazyArray(ArrayMeta):
    """What ``_data`` of a lazy tensor reads as: metadata now, the real array on demand."""
    __slots__ = ("_tensor",)
    __array_priority__ = 1e9

    def __init__(self, tensor, shape, dtype):
        ArrayMeta.__init__(self, shape, dtype)
        self._tensor = tensor

    @property
    def flags(self):
        """Only contiguity is known without the data: an op's result is C-contiguous (the
        runtime makes it so), a view's layout is unknown (reported as not contiguous)."""
        lz = self._tensor.__dict__.get("_lazy")
        if lz is None:
            return self._real().flags
        return _Flags(lz.view is None, lz.view is None and len(self.shape) <= 1)

    def _real(self):
        t = self._tensor
        lz = t.__dict__.get("_lazy")
        if lz is not None:
            lz.trace.flush(f"the values of a tensor were needed")
        return t.__dict__["_data"]

    def __getattr__(self, name):
        return getattr(self._real(), name)

    def __ember_array__(self):
        """The real array (ember's protocol for array stand-ins): runs the pending graph."""
        return self._real()

    def __array__(self, dtype=None, copy=None):
        a = self._real()
        return a if dtype is None else a.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(i._real() if type(i) is LazyArray else i for i in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(o._real() if type(o) is LazyArray else o for o in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_realize(args), **_realize(kwargs))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return int(self.shape[0])

    def __repr__(self):
        return repr(self._real())


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "contiguous", "writeable", "owndata")

    def __init__(self, c, f):
        self.c_contiguous = self.contiguous = c
        self.f_contiguous = f
        self.writeable = True
        self.owndata = c

    def __getitem__(self, name):
        return getattr(self, {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
                              "C": "c_contiguous", "F": "f_contiguous"}.get(name, name.lower()))


def _realize(x):
    if type(x) is LazyArray:
        return x._real()
    if type(x) in (list, tuple):
        return type(x)(_realize(i) for i in x)
    if type(x) is dict:
        return {k: _realize(v) for k, v in x.items()}
    return x


def _forward(name):
    def method(self, *args):
        return getattr(self._real(), name)(*_realize(args))
    method.__name__ = name
    return method


for _name in ("__getitem__", "__setitem__", "__iter__", "__bool__", "__float__", "__int__",
              "__index__", "__complex__", "__add__", "__radd__", "__sub__", "__rsub__",
              "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__",
              "__rfloordiv__", "__mod__", "__pow__", "__rpow__", "__neg__", "__pos__",
              "__abs__", "__invert__", "__and__", "__or__", "__xor__", "__lt__", "__le__",
              "__gt__", "__ge__", "__eq__", "__ne__", "__matmul__", "__rmatmul__",
              "__iadd__", "__isub__", "__imul__", "__itruediv__", "__copy__", "__deepcopy__",
              "__reduce_ex__", "__contains__"):
    setattr(LazyArray, _name, _forward(_name))
LazyArray.__hash__ = None


class _LazyMixin:
    """Overrides of a lazy tensor; see the module docstring."""

    @property
    def _data(self):
        # a fresh stand-in per read: caching it on the tensor would make a reference cycle
        # (tensor -> proxy -> tensor) that keeps dead intermediates alive as graph outputs
        lz = self.__dict__["_lazy"]
        shape, dtype = lz.trace.metas[lz.index]
        return LazyArray(self, shape, dtype.np)

    @_data.setter
    def _data(self, value):
        lz = self.__dict__.get("_lazy")
        if lz is not None:
            lz.trace.flush("a tensor's storage was replaced")
        self.__dict__["_data"] = value

    @property
    def grad_fn(self):
        lz = self.__dict__.get("_lazy")
        if lz is not None:
            lz.trace.flush("autograd history was needed (grad_fn, is_leaf, backward)")
        return self.__dict__.get("grad_fn")

    @grad_fn.setter
    def grad_fn(self, value):
        self.__dict__["grad_fn"] = value

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Recorded into the pending graph when it can be (`ember._dynamo.step_backward`),
        else the graph runs and the engine computes the gradients."""
        lz = self.__dict__.get("_lazy")
        if lz is not None:
            from . import config
            from .step_backward import record_backward
            if config.capture_backward and record_backward(self, gradient, retain_graph,
                                                           create_graph, inputs):
                return None
        return super().backward(gradient, retain_graph, create_graph, inputs)

    @property
    def device(self):
        from .._core.device import CPU
        return CPU

    def numpy(self, *, force=False):
        lz = self.__dict__.get("_lazy")
        if lz is not None:
            if self._requires_grad and not force and STATE.grad_enabled:
                raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                                   "tensor.detach().numpy() instead.")
            hook = getattr(lz.trace.session, "numpy_hook", None)
            if hook is not None:
                return hook(self)  # a compiled NumPy program: the array stays in the graph
            lz.trace.flush("the values of a tensor were needed (numpy())")
        return type(self).numpy(self, force=force)  # the flush restored the class

    def __array__(self, dtype=None, copy=None):
        lz = self.__dict__.get("_lazy")
        if lz is not None:
            lz.trace.flush("the values of a tensor were needed (NumPy)")
        return type(self).__array__(self, dtype, copy)

    def detach(self):
        """A new tensor sharing storage with no autograd history (recorded, not run)."""
        lz = self.__dict__.get("_lazy")
        if lz is None:
            return super().detach()
        return lz.trace.alias(self)

    @property
    def data(self):
        lz = self.__dict__.get("_lazy")
        if lz is None:
            return super().data
        return lz.trace.alias(self)

    @data.setter
    def data(self, value):
        lz = self.__dict__.get("_lazy")
        if lz is not None:
            lz.trace.flush("a tensor's .data was replaced")
        type(self).__mro__[2].data.fset(self, value)


_LAZY_CLASSES = {}


def lazy_class(cls):
    """The lazy counterpart of tensor class ``cls`` (made once per class)."""
    lc = _LAZY_CLASSES.get(cls)
    if lc is None:
        lc = type(cls.__name__, (_LazyMixin, cls), {"__module__": cls.__module__,
                                                  "__qualname__": cls.__qualname__,
                                                  "_is_lazy_class": True})
        _LAZY_CLASSES[cls] = lc
    return lc


def is_lazy(t):
    return "_lazy" in t.__dict__ if isinstance(t, Tensor) else False


_ = np
