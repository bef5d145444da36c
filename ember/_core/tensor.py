"""The Tensor: a NumPy (or backend) array plus autograd metadata.

A Tensor's storage is ``_data``, an array of its backend.  Views are arrays that
view the root array (``_base``) and share its version counter, a one-element
list bumped by every in-place write.  Autograd fields: ``grad_fn`` (the Node
that produced it, with ``_output_nr``), ``_requires_grad`` and, for leaves,
``_accumulator`` (the AccumulateGrad node).

Most attributes are class-level defaults so that creating a result costs one
``__new__`` and one attribute store (the eager hot path creates one per op).
Operator methods (``add``, ``sum``, ...) are attached by the ops modules that
define them, and ``backward`` by autograd: the lower layer never imports them.
"""
import numpy as np

from . import dtype as _dt
from . import layout as _layout
from . import storage as _storage
from .device import (CPU, XP_BY_ARRAY_TYPE, accelerator_name, backend_for_array,
                     device as _device, get_backend)
from .meta_device import MetaArray
from .state import STATE

__all__ = ["Tensor", "wrap"]

_ndarray = np.ndarray
_FROM_NP = _dt.FROM_NP



_SCALAR_OF_GRAD_WARNED = False


def _warn_scalar_of_grad(t):
    # float()/complex() of a tensor that requires grad warn once per process, as torch's
    # TORCH_WARN_ONCE (int(), bool() and .item() do not), and only in grad mode (LBFGS's
    # float(loss) under its no_grad step does not warn)
    global _SCALAR_OF_GRAD_WARNED
    if t.requires_grad and STATE.grad_enabled and not _SCALAR_OF_GRAD_WARNED:
        _SCALAR_OF_GRAD_WARNED = True
        import warnings
        warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                      "unexpected behavior.\nConsider using tensor.detach() first.",
                      UserWarning, stacklevel=3)

class Tensor:
    """A multi-dimensional matrix of elements of a single dtype (``torch.Tensor``)."""

    # Defaults live on the class: a fresh result only stores _data.
    _requires_grad = False
    grad_fn = None
    _output_nr = 0
    _grad = None
    _base = None
    _view_chain = None      # ((op, params), ...) from _base to this view
    _view_base_fn = None    # _base.grad_fn when this view's grad_fn was made
    _vc = None              # version counter: [int], shared with views; created on first need
    _hooks = None
    _post_acc_hooks = None
    _retains_grad = False
    _accumulator = None
    _is_param = False
    _fw_tangent = None      # forward-mode AD tangent (ember.autograd.forward_ad)
    __ember_function__ = None

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        if args or kwargs:
            self._data = _legacy_ctor(*args, **kwargs)
        else:
            self._data = np.empty((0,), dtype=_dt.get_default_dtype().np)
        return self

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "__torch_function__" in cls.__dict__ and "__ember_function__" not in cls.__dict__:
            # libraries written for torch define the override under torch's name;
            # torch's _disabled_torch_function_impl there means "no override"
            f = cls.__dict__["__torch_function__"]
            cls.__ember_function__ = None if getattr(
                getattr(f, "__func__", f), "__ember_no_override__", False) else f
        if getattr(cls, "__ember_function__", None) is not None:
            from . import dispatch
            dispatch.register_override_type(cls)

    # ---- metadata -------------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self):
        return _FROM_NP[self._data.dtype]

    @property
    def device(self):
        return CPU if type(self._data) is _ndarray else _device(backend_for_array(self._data).name)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def stride(self, dim=None):
        st = tuple(s // self._data.itemsize for s in self._data.strides) if self._data.itemsize \
            else (0,) * self.dim()
        return st if dim is None else st[_wrap_dim(dim, self.dim())]

    def storage_offset(self):
        if self._base is None:
            return 0
        if type(self._data) is MetaArray:
            return self._data.offset
        root = self._base._data
        return (self._data.__array_interface__["data"][0] -
                root.__array_interface__["data"][0]) // max(self._data.itemsize, 1)

    def is_contiguous(self, memory_format=None):
        """Whether the elements lie in memory in ``memory_format``'s order (default: row-major),
        size-1 dims ignored."""
        if memory_format is not None and memory_format in _layout.CHANNELS_LAST_FORMATS:
            return _layout.is_contiguous_as(self.shape, self.stride(), memory_format)
        return self._data.flags.c_contiguous

    def get_device(self):
        """-1 for CPU tensors, else the device index."""
        return -1 if type(self._data) is _ndarray else (self.device.index or 0)

    def is_pinned(self, device=None):
        return False

    def pin_memory(self, device=None):
        """Page-locked memory only matters for accelerator transfers: with an accelerator
        backend a CPU tensor is returned as is; without one, torch's error."""
        if accelerator_name() is None:
            raise RuntimeError("Cannot access accelerator device when none is available.")
        return self

    def share_memory_(self):
        """Moves the storage to shared memory (a no-op if it already is there); processes that
        receive this tensor through ember.multiprocessing then share its memory."""
        from .shared_storage import share
        return share(self)

    def is_shared(self):
        """True if the tensor's storage is in shared memory."""
        from .shared_storage import is_shared
        return is_shared(self._data)

    def is_inference(self):
        return getattr(self, "_inference", False)

    def new(self, *args, **kwargs):
        """Legacy constructor: a tensor of this tensor's dtype (``new()`` is empty)."""
        from .dtype import get_default_dtype
        t = Tensor(*args, **kwargs) if args else Tensor()
        if t.dtype != self.dtype:
            t._data = t._data.astype(self.dtype.np)
        _ = get_default_dtype
        return t

    def data_ptr(self):
        if type(self._data) is MetaArray:  # torch's: no storage at 0, plus the view's offset
            return self._data.offset * self._data.itemsize
        return self._data.__array_interface__["data"][0]

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.is_complex

    def is_signed(self):
        return self.dtype.is_signed

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def layout(self):
        return _layout.strided

    @property
    def is_sparse(self):
        return False

    @property
    def is_quantized(self):
        return False

    @property
    def is_meta(self):
        return type(self._data) is MetaArray

    # device flags of torch's other backends: no ember tensor lives on them
    is_xpu = is_mps = is_ipu = is_mtia = is_maia = is_vulkan = is_xla = is_mkldnn = \
        is_nested = is_sparse_csr = property(lambda self: False)

    def _is_view(self):
        """Whether this tensor is a view of another (its ``_base``)."""
        return self._base is not None

    def untyped_storage(self):
        """The bytes of the memory this tensor (and every view of it) lives in."""
        return _storage.untyped_storage(self)

    def storage(self):
        """This tensor's memory as a TypedStorage of its dtype (deprecated, as in torch)."""
        return _storage.storage(self)

    def const_data_ptr(self):
        return self.data_ptr()

    def dim_order(self, *, ambiguity_check=False):
        """The dimensions ordered from outermost to innermost in memory (by stride)."""
        st = self.stride()
        return tuple(sorted(range(len(st)), key=lambda d: -st[d]))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from .overrides import default_torch_function
        return default_torch_function(cls, func, types, args, kwargs)

    def as_subclass(self, cls):
        """This tensor's data and autograd history viewed as an instance of ``cls`` (a Tensor
        subclass); no copy is made."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass: cls must be a subclass of Tensor, got {cls!r}")
        t = object.__new__(cls)
        t.__dict__.update(self.__dict__)
        return t

    @property
    def _version(self):
        """The version counter's value, as torch's ``Tensor._version``: how many in-place
        writes this tensor and the views sharing its memory have seen."""
        return 0 if self._vc is None else self._vc[0]


    @property
    def output_nr(self):
        return self._output_nr

    # ---- autograd fields ------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._set_requires_grad(value)

    def requires_grad_(self, requires_grad=True):
        # torch refuses the method (not the setter, factories or Parameter) inside vmap: a
        # leaf made there would be shared by every batch element, e.g. an optimizer's step
        # would write them all into one parameter
        if STATE.intercept and any(getattr(m, "refuses_requires_grad", False)
                                   for m in STATE.modes):
            raise RuntimeError(
                "You are attempting to call Tensor.requires_grad_() (or perhaps using "
                "torch.autograd.functional.* APIs) inside of a function being transformed by a "
                "functorch transform. This is unsupported, please attempt to use the functorch "
                "transforms (e.g. grad, vjp, jacrev, jacfwd, hessian) or call requires_grad_() "
                "outside of a function being transformed instead.")
        return self._set_requires_grad(requires_grad)

    def _set_requires_grad(self, requires_grad):
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                                   "you want to use a computed variable in a subgraph that doesn't "
                                   "require differentiation use var_no_grad = var.detach().")
            return self
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        if self.grad_fn is not None and not self._retains_grad and self._grad is None:
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be populated "
                          "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                          UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: expected "
                                   f"{list(self.shape)}, got {list(value.shape)}")
            if value.dtype != self.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: expected "
                                   f"{self.dtype}, got {value.dtype}")
        self._grad = value

    @property
    def data(self):
        t = wrap(self._data)
        return t

    @data.setter
    def data(self, value):
        if STORAGE_HOOKS:
            storage_changing(self)
        self._data = real_array(value._data)
        self._vc = None
        self._base = None
        self._view_chain = None

    def detach(self):
        """A new tensor sharing storage (and version counter) with no autograd history."""
        t = wrap(self._data)
        # shares the version counter, but is not an autograd view (torch: ``_base`` is None),
        # so in-place writes to it are allowed even when ``self`` is a leaf requiring grad
        t._vc = _version_of(self)
        return t

    def detach_(self):
        if self._base is not None:  # any view, as torch's (whether or not grad is involved)
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution.")
        self.grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self):
        if self.grad_fn is None:
            return
        if not self._retains_grad:
            self._retains_grad = True
            self.grad_fn._retain(self)

    @property
    def retains_grad(self):
        return self._retains_grad

    # ---- conversion -----------------------------------------------------------------
    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted "
                               f"to Scalar")
        _check_not_batched(self)
        if VALUE_HOOKS:
            r = VALUE_HOOKS[-1](self, "item")
            if r is not NotImplemented:
                return r
        if type(self._data) is MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return _host(self._data).reshape(()).item()

    def tolist(self):
        if VALUE_HOOKS:
            r = VALUE_HOOKS[-1](self, "tolist")
            if r is not NotImplemented:
                return r
        return _host(self._data).tolist()

    def numpy(self, *, force=False):
        # as torch's: refused only in grad mode (botorch reads parameters under no_grad)
        if self._requires_grad and not force and STATE.grad_enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if type(self._data) is not _ndarray:
            if not force:
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                                f"Tensor.cpu() to copy the tensor to host memory first.")
            return _host(self._data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()   # torch's error for a tensor that requires grad
        if dtype is not None:
            a = a.astype(dtype, copy=bool(copy))
        elif copy:
            a = a.copy()
        return a

    # NumPy's binary operators defer to a Tensor's reflected ones: ``np.float64(2) * t`` is
    # ``t.__rmul__`` (a Tensor, as in torch, not a float64 ndarray), and an
    # ndarray on the left raises TypeError as torch's does
    __array_priority__ = 1000

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # a NumPy ufunc of Tensors (np.sin(t), ``t * ndarray``) returns a Tensor without
        # history, as torch's; torch turns bool results into uint8
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        _dt.from_np(array.dtype)
        return wrap(np.asarray(array))

    def __dlpack__(self, stream=None, **kw):
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}))

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __index__(self):
        if self.numel() != 1 or self.dtype.is_floating_point or self.dtype.is_complex:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __int__(self):
        return int(self.item())

    def __float__(self):
        _warn_scalar_of_grad(self)
        return float(self.item())

    def __complex__(self):
        _warn_scalar_of_grad(self)
        return complex(self.item())

    __hash__ = object.__hash__

    def __repr__(self, *, tensor_contents=None):
        from .printing import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto):
        from .serialization_hooks import reduce_tensor
        return reduce_tensor(self)

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a torch.nn.utils."
                               "weight_norm usage, see https://github.com/pytorch/pytorch/pull/"
                               "103001")
        if id(self) in memo:
            return memo[id(self)]
        new = type(self).__new__(type(self))
        new._data = self._data.copy()
        new._requires_grad = self._requires_grad
        for k, v in self.__dict__.items():
            if k not in ("_data", "_requires_grad", "_vc", "_base", "_view_chain",
                         "_accumulator", "_hooks", "_post_acc_hooks", "_grad"):
                import copy
                new.__dict__[k] = copy.deepcopy(v, memo)
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = new
        return new




# ``hook(tensor, "item" | "tolist")`` answers a Python read of a tensor's values instead of the
# data (NotImplemented: read the data): ember.export makes the values of its inputs symbols
VALUE_HOOKS = []

# called with a tensor whose storage is about to be replaced (``t_``, ``.data = ``, a resize):
# ember.compile registers one that runs a pending graph reading that tensor first
STORAGE_HOOKS = []


def storage_changing(t):
    for hook in STORAGE_HOOKS:
        hook(t)


def real_array(a):
    """``a``, or the array it stands for when it is a stand-in not computed yet."""
    return a.__ember_array__() if hasattr(type(a), "__ember_array__") else a


def _host(a):
    if type(a) is _ndarray:
        return a
    real = getattr(type(a), "__ember_array__", None)
    if real is not None:  # a stand-in for an array not computed yet (ember.compile)
        return _host(a.__ember_array__())
    return backend_for_array(a).to_host(a)


def _check_not_batched(t):
    if getattr(t, "_level", None) is not None:
        raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't "
                           "support vmap over calling .item() on a Tensor, please try to rewrite "
                           "what you're doing with other operations.")


_new = object.__new__


def wrap(arr):
    """Make a Tensor around an array (no copy, no autograd history)."""
    t = _new(Tensor)
    t._data = arr
    return t


def host_tensor(arr, like):
    """A tensor of host (NumPy) array ``arr`` -- an index table or constant computed from
    shapes -- on ``like``'s device, so that composites never mix a CPU tensor into the
    operators of another backend."""
    d = like.device
    return wrap(arr if d.type == "cpu" else get_backend(d.type).from_host(arr))


def _version_of(t):
    """The version counter of ``t``, created (and shared with its base) on first need."""
    v = t._vc
    if v is None:
        base = t._base
        if base is not None:
            v = base._vc
            if v is None:
                v = base._vc = [0]
        else:
            v = [0]
        t._vc = v
    return v


def _wrap_dim(dim, ndim):
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _legacy_ctor(*args, **kwargs):
    # Tensor(sizes...) or Tensor(data): the legacy constructor makes default-dtype floats.
    d = _dt.get_default_dtype().np
    if len(args) == 1 and not isinstance(args[0], int):
        a = args[0]
        if isinstance(a, Tensor):
            return a._data
        return np.asarray(a, dtype=d)
    if all(isinstance(a, int) for a in args):
        return np.empty(args, dtype=d)
    raise TypeError(f"Tensor(): invalid arguments {args}")


class Size(tuple):
    """The shape of a tensor (``torch.Size``): a tuple of ints."""

    def __repr__(self):
        return f"{_dt.REPR_PREFIX[0]}Size([{', '.join(str(s) for s in self)}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __reduce__(self):
        return (Size, (tuple(self),))


def xp_of(t):
    return XP_BY_ARRAY_TYPE[type(t._data)]
