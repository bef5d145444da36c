"""`NumpyArray`: what an ``np.ndarray`` is while a compiled NumPy program runs.

It holds an ember Tensor (zero-copy ``ember.from_numpy`` of the caller's array, or the lazy
result of a captured op) and answers NumPy's protocols: ufuncs and operators arrive through
``__array_ufunc__``, NumPy functions through ``__array_function__``, ember functions
(``ember.from_numpy(a)``, ``ember.as_tensor(a)``) through ``__ember_function__``.  All of
them become ember ops (`ember._dynamo.numpy_ufuncs`, ``numpy_reductions``,
``numpy_functions``, ``numpy_indexing``) that the capture session records.  Anything else
needs the real array: the pending graph runs and NumPy answers.

``scalar`` marks a value that NumPy would have returned as a NumPy scalar (``np.float64``)
rather than an array (full reductions, ufuncs of 0-d operands, integer indexing): the
compiled function returns it as one.
"""
import math
import operator

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

__all__ = ["NumpyArray", "tensor_meta"]

# the protocol implementations, set by `ember._dynamo.numpy_functions` when it loads (it
# imports this module; an import inside every ufunc call would cost a microsecond each)
_impl = None


def tensor_meta(t):
    """(shape, NumPy dtype) of tensor ``t``, read from the pending trace when ``t`` is lazy:
    its ``_data`` proxy is left unmade (a proxy refers back to its tensor, a cycle that
    keeps dead intermediates alive until the next GC and so makes them graph outputs)."""
    lz = t.__dict__.get("_lazy")
    if lz is not None and lz.index is not None and not lz.trace.closed:
        try:
            shape, dtype = lz.trace.metas[lz.index]
            return tuple(shape), dtype.np
        except (AttributeError, IndexError, TypeError):  # the trace keeps them otherwise
            pass
    return tuple(t.shape), t._data.dtype


class NumpyArray(NDArrayOperatorsMixin):
    """An ndarray-like over an ember Tensor; see the module docstring."""
    __slots__ = ("_t", "scalar", "__weakref__")
    __array_priority__ = 1000  # above ember Tensors': ``tensor + array`` asks us first

    def __init__(self, tensor, scalar=False):
        self._t = tensor
        self.scalar = scalar

    # ---- the protocols ------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _impl.ufunc_call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _impl.function_call(func, args, kwargs)

    @classmethod
    def __ember_function__(cls, func, types, args, kwargs=None):
        return _impl.ember_function_call(func, args, kwargs or {})

    def __array__(self, dtype=None, copy=None):
        a = self.materialize("the array was converted with np.asarray/np.array")
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def materialize(self, reason=None):
        """The real ndarray (runs the pending graph; ``reason``: log it as a graph break)."""
        return _impl.real_array(self, reason)

    # ---- metadata: known without running anything ----------------------------------
    @property
    def tensor(self):
        return self._t

    @property
    def shape(self):
        return tensor_meta(self._t)[0]

    @property
    def dtype(self):
        return tensor_meta(self._t)[1]

    @property
    def ndim(self):
        return len(tensor_meta(self._t)[0])

    @property
    def size(self):
        n = 1
        for s in tensor_meta(self._t)[0]:
            n = n * s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    # ---- views and conversions -------------------------------------------------------
    @property
    def T(self):
        return np.transpose(self)

    @property
    def mT(self):
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return np.swapaxes(self, -1, -2)

    @property
    def real(self):
        return np.real(self)

    @property
    def imag(self):
        return np.imag(self)

    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return np.reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return np.transpose(self, axes or None)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return _impl.astype(self, dtype, casting, copy)

    def copy(self, order="C"):
        return np.copy(self)

    def flatten(self, order="C"):
        return np.copy(np.ravel(self, order))

    def fill(self, value):
        self[...] = value

    def sort(self, axis=-1, kind=None, order=None, stable=None):
        self[...] = np.sort(self, axis=axis, kind=kind, order=order)

    def item(self, *args):
        return self.materialize().item(*args)

    def tolist(self):
        return self.materialize().tolist()

    # ---- indexing ------------------------------------------------------------------
    def __getitem__(self, index):
        return _impl.getitem(self, index)

    def __setitem__(self, index, value):
        _impl.setitem(self, index, value)

    def __iter__(self):
        shape = self.shape
        if not shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(shape[0]):
            yield self[i]

    # ---- Python values: the data is needed -------------------------------------------
    def __bool__(self):
        return bool(self.materialize())

    def __float__(self):
        return float(self.materialize())

    def __int__(self):
        return int(self.materialize())

    def __complex__(self):
        return complex(self.materialize())

    def __index__(self):
        return operator.index(self.materialize())

    def __round__(self, ndigits=None):
        a = self.materialize()
        return round(a[()] if a.ndim == 0 else a, ndigits)

    def __trunc__(self):
        return math.trunc(self.materialize()[()])

    def __floor__(self):
        return math.floor(self.materialize()[()])

    def __ceil__(self):
        return math.ceil(self.materialize()[()])

    def __contains__(self, value):
        return value in self.materialize()

    def __repr__(self):
        a = self.materialize()
        return repr(a[()] if self.scalar else a)

    def __str__(self):
        a = self.materialize()
        return str(a[()] if self.scalar else a)

    def __format__(self, spec):
        a = self.materialize()
        return format(a[()] if self.scalar or a.ndim == 0 else a, spec)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        a = self.materialize()
        return (_rebuild, (a[()] if self.scalar else a,))

    __hash__ = None

    def __getattr__(self, name):
        # any other ndarray attribute: the real array answers (a graph break)
        if name.startswith("__") or name in ("_t", "scalar"):
            raise AttributeError(name)
        return _impl.real_attribute(self, name)


def _rebuild(a):
    return a


def _reduction_method(func):
    def method(self, *args, **kwargs):
        return func(self, *args, **kwargs)
    method.__name__ = func.__name__
    return method


# ndarray methods that are their NumPy function with the array first
for _name, _func in (("sum", np.sum), ("prod", np.prod), ("mean", np.mean), ("std", np.std),
                     ("var", np.var), ("max", np.max), ("min", np.min),
                     ("argmax", np.argmax), ("argmin", np.argmin), ("all", np.all),
                     ("any", np.any), ("cumsum", np.cumsum), ("cumprod", np.cumprod),
                     ("clip", np.clip), ("round", np.round), ("dot", np.dot),
                     ("trace", np.trace), ("diagonal", np.diagonal), ("argsort", np.argsort),
                     ("take", np.take), ("squeeze", np.squeeze), ("swapaxes", np.swapaxes),
                     ("ravel", np.ravel), ("repeat", np.repeat), ("nonzero", np.nonzero),
                     ("conj", np.conjugate), ("conjugate", np.conjugate),
                     ("searchsorted", np.searchsorted),
                     ("compress", np.compress), ("choose", np.choose)):
    setattr(NumpyArray, _name, _reduction_method(_func))
