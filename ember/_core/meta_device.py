"""The ``meta`` device: tensors with shape, dtype and strides but no data.

A meta tensor's ``_data`` is a `MetaArray`; the backend registry serves it like any
other device, so ``device('meta')``, ``t.device``, ``.to('meta')`` and the device checks
of the dispatcher need nothing special.  An operator on meta inputs runs no kernel:
the dispatcher calls `meta_kernel`, which runs the operator's shape rule (every `Op`
has one, see ``meta.py``) and returns MetaArrays of the rule's shapes and dtypes.
Views get the strides and storage offset the view has on a real array: the view's
kernel runs on a stand-in array of zero-byte elements (so it touches no memory, and its
"byte" strides are element strides); the dtype-changing views compute theirs by hand.
Autograd, hooks and in-place writes then run unchanged on top (``record`` keeps meta
arrays, backward's operators run on meta gradients), as torch's meta device does.

Values never exist: reading them raises torch's errors (`no_data`).
"""
import numpy as np

from .array_meta import ArrayMeta
from .device import register_backend

_SHAPE = ArrayMeta.shape  # the slot MetaArray's shape property keeps its value in

__all__ = ["MetaArray", "META_XP", "meta_kernel", "meta_operands", "no_data", "is_meta_device",
           "contiguous_strides"]

_NO_DATA = "Cannot copy out of meta tensor; no data!"


def no_data(*_):
    raise NotImplementedError(_NO_DATA)


def contiguous_strides(shape, itemsize=1):
    st = []
    acc = itemsize
    for s in reversed(shape):
        st.append(acc)
        acc = acc * max(s, 1)
    return tuple(reversed(st))


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "writeable")

    def __init__(self, c, f):
        self.c_contiguous, self.f_contiguous, self.writeable = c, f, True

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "WRITEABLE": True}[key]


def _is_contiguous(shape, strides, itemsize):
    """torch's rule: size-1 dims have any stride; an empty tensor is contiguous."""
    if 0 in shape:
        return True
    acc = itemsize
    for s, st in zip(reversed(shape), reversed(strides)):
        if s != 1:
            if st != acc:
                return False
            acc *= s
    return True


class MetaArray(ArrayMeta):
    """An array's metadata: `ArrayMeta`'s ``shape`` and NumPy ``dtype``, ``strides`` (bytes,
    as NumPy's) and the storage ``offset`` (elements) of a view.  It answers what Tensor's
    metadata properties ask of an array; anything that would read values raises.  The
    root array of a meta tensor keeps its `MetaUntypedStorage` (``storage``, made on the
    first ``untyped_storage()``): one storage object per tensor data, as torch's, so a
    resize through it is seen by every later ``untyped_storage()``."""
    __slots__ = ("strides", "offset", "storage")
    __array_ufunc__ = None  # NumPy must not compute on it
    __hash__ = None

    def __init__(self, shape, dtype, strides=None, offset=0):
        shape = tuple(shape)
        dtype = np.dtype(dtype)
        _SHAPE.__set__(self, shape)
        self.dtype = dtype
        self.strides = contiguous_strides(shape, dtype.itemsize) if strides is None \
            else tuple(strides)
        self.offset = offset
        self.storage = None

    @property
    def shape(self):
        return _SHAPE.__get__(self)

    @shape.setter
    def shape(self, shape):
        """NumPy's in-place reshape: only where the strides allow a view (AttributeError
        otherwise, as NumPy raises; ``view``/``reshape`` test viewability with it)."""
        shape = _shape(shape)
        st = view_strides(self.shape, self.strides, shape, self.dtype.itemsize)
        if st is None:
            raise AttributeError("Incompatible shape for in-place modification. Use "
                                 "`.reshape()` to make a copy with the desired shape.")
        _SHAPE.__set__(self, shape)
        self.strides = st

    def stand_in(self):
        """An ndarray of zero-byte elements with this array's shape and element strides:
        NumPy's view arithmetic runs on it without touching memory."""
        it = self.dtype.itemsize
        return np.lib.stride_tricks.as_strided(_V0, self.shape, [s // it for s in self.strides])

    def view(self):
        return MetaArray(self.shape, self.dtype, self.strides, self.offset)

    @property
    def flags(self):
        it = self.dtype.itemsize
        return _Flags(_is_contiguous(self.shape, self.strides, it),
                      _is_contiguous(self.shape[::-1], self.strides[::-1], it))

    def copy(self, order="C"):
        return MetaArray(self.shape, self.dtype)

    def astype(self, dtype, copy=True, **kw):
        return MetaArray(self.shape, dtype)

    def __setitem__(self, key, value):
        pass  # a write of meta values into a meta array: nothing to store

    def __array__(self, *a, **k):
        no_data()

    def _no_value(self, *a):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    # Python code that asks a meta array for values gets torch's error for reading one
    __bool__ = __float__ = __int__ = __index__ = __complex__ = _no_value
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _no_value
    all = any = tolist = item = _no_value

    def __array_function__(self, func, types, args, kwargs):
        no_data()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


class _MetaNamespace:
    """The array namespace of meta arrays.  Kernels never receive it (the dispatcher runs
    shape rules instead); code outside kernels that asks it to compute learns why not."""
    __name__ = "ember.meta"

    @staticmethod
    def may_share_memory(a, b):
        return True  # asked of a view op's result only: views share their base's storage

    # creation needs no data: code that makes arrays of its inputs' namespace (autograd's
    # seed and zero gradients) gets meta arrays
    @staticmethod
    def empty(shape, dtype=np.float64, **kw):
        return MetaArray(_shape(shape), dtype)

    zeros = ones = empty

    @staticmethod
    def full(shape, fill_value, dtype=None, **kw):
        return MetaArray(_shape(shape), np.result_type(fill_value) if dtype is None else dtype)

    @staticmethod
    def empty_like(a, dtype=None, **kw):
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    zeros_like = ones_like = empty_like

    @staticmethod
    def full_like(a, fill_value, dtype=None, **kw):
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    @staticmethod
    def broadcast_to(a, shape):
        shape = _shape(shape)
        lead = len(shape) - a.ndim
        st = (0,) * lead + tuple(0 if n == 1 and shape[lead + i] != 1 else s
                                 for i, (n, s) in enumerate(zip(a.shape, a.strides)))
        return MetaArray(shape, a.dtype, st, a.offset)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(f"{name} cannot run on meta tensors: they hold no data")


META_XP = _MetaNamespace()


def _from_host(arr):
    """``.to('meta')``: the metadata of a host array (a dense layout keeps its strides, as
    torch's ``preserve_format``)."""
    arr = np.asarray(arr) if not isinstance(arr, np.ndarray) else arr
    if arr.flags.c_contiguous:
        return MetaArray(arr.shape, arr.dtype)
    return MetaArray(arr.shape, arr.dtype, tuple(
        contiguous_strides_permuted(arr.shape, arr.strides, arr.itemsize)))


def contiguous_strides_permuted(shape, strides, itemsize):
    """Dense strides laid out in the order of ``strides`` (torch's preserve_format for
    non-overlapping tensors: a transposed input gives a transposed output)."""
    order = sorted(range(len(shape)), key=lambda i: (-abs(strides[i]), i))
    out = [0] * len(shape)
    acc = itemsize
    for i in reversed(order):
        out[i] = acc
        acc *= max(shape[i], 1)
    return out


BACKEND = register_backend("meta", META_XP, MetaArray, to_host=no_data, from_host=_from_host)


def is_meta_device(device):
    """Whether a factory's ``device`` param (a device, a string or None) names the meta device."""
    return device is not None and (device == "meta" if isinstance(device, str) else
                                   getattr(device, "type", None) == "meta")


# ---- operands and the meta "kernel" ------------------------------------------------------

def meta_operands(args, arrays):
    """``arrays`` with every tensor's array as a MetaArray when the call mixes meta tensors
    with 0-dim CPU tensors (torch lets a CPU scalar tensor join any device), else torch's
    device error (a meta tensor is never a CPU scalar, so it decides or it mismatches).
    Returns None when no meta tensor takes part."""
    from .tensor import Tensor
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not any(type(t._data) is MetaArray for t in tensors):
        return None
    # torch: the first tensor that is not a CPU scalar tensor sets the device
    common = next((t for t in tensors if not _cpu_scalar(t)), tensors[0]).device
    for t in tensors:
        if t.device != common and not _cpu_scalar(t):
            raise RuntimeError(f"Tensor on device {t.device} is not on the expected device "
                               f"{common}!")
    return [MetaArray(a.shape, a.dtype) if isinstance(a, np.ndarray) else a for a in arrays]


def _cpu_scalar(t):
    return type(t._data) is np.ndarray and t.ndim == 0


def _meta_of(a):
    from .dtype import FROM_NP
    from .meta import TensorMeta
    return TensorMeta(a.shape, FROM_NP[a.dtype]) if type(a) is MetaArray else a


_NO_FAKE = ("You may have run into this message while using an operator with PT2 compilation "
            "APIs (torch.compile/torch.export); in order to use this operator with those APIs "
            "you'll need to add a fake impl. Please see the following for next steps:  "
            "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")
_ELEMENTWISE = ("unary", "binary", "activation")  # Category values (a StrEnum)

# torch's words for operators whose output size depends on values
_DATA_DEPENDENT = {
    "nonzero": "The register_meta function for torch.nonzero() raises unimplemented by default, "
               "as a correct data-independent implementation does not exist. This implementation "
               "returns a fake value, assuming all elements of the tensor are non-zero. To enable "
               "this registration, please set "
               "'torch.fx.experimental._config.meta_nonzero_assume_all_nonzero' to True.",
}
_DATA_DEPENDENT["index"] = _DATA_DEPENDENT["nonzero"]  # a boolean mask index: torch's nonzero
# ops whose torch composite reads the size with .item() (one_hot's inferred class count)
_READS_ITEM = {"one_hot"}


def meta_kernel(op, arrays, params):
    """What ``op``'s kernel would return on ``arrays``, as MetaArrays (a tuple for
    ``n_out != 1``), computed by its shape rule."""
    from .meta import DataDependentShape
    if op.name == "_to_device" and params.get("backend") != "meta":
        no_data()
    metas = [_meta_of(a) for a in arrays]
    try:
        r = op.shape(*metas, **params)
    except DataDependentShape:
        if op.name in _READS_ITEM:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors") from None
        raise NotImplementedError(_DATA_DEPENDENT.get(op.name) or (
            f"aten::{op.name}: attempted to run this operator with Meta tensors, but there was "
            f"no fake impl or Meta kernel registered. {_NO_FAKE}")) from None
    if op.n_out == 1:
        if op.view:
            return _view_array(op, arrays[0], r, params)
        shape = tuple(r[0])
        if op.name == "empty_strided":
            return MetaArray(shape, r[1].np, tuple(s * r[1].itemsize for s in params["stride"]))
        if op.category in _ELEMENTWISE:
            return MetaArray(shape, r[1].np, _kept_layout(arrays, shape, r[1].np.itemsize))
        return MetaArray(shape, r[1].np)
    return tuple(MetaArray(tuple(s), d.np) for s, d in r)


def _kept_layout(arrays, shape, itemsize):
    """Elementwise results keep the memory order of an input of their shape (NumPy's
    order='K', what ember's CPU kernels give; torch's TensorIterator does the same)."""
    for a in arrays:
        if type(a) is MetaArray and a.shape == shape:
            if a.flags.c_contiguous:
                return None
            return tuple(contiguous_strides_permuted(shape, a.strides, itemsize))
    return None


_V0 = np.empty(0, dtype="V0")


def _view_array(op, x, rule, params):
    """The result of view op ``op`` on MetaArray ``x``: the rule's shape and dtype, the
    strides and offset the view has on a real array."""
    shape, dtype = tuple(rule[0]), rule[1].np
    it = x.itemsize
    est = tuple(s // it for s in x.strides)  # element strides
    name = op.name
    if name == "as_strided":
        return MetaArray(shape, dtype, tuple(s * it for s in params["stride"]),
                         x.offset + params["rel"])
    if name in ("real", "imag", "view_as_real"):
        if x.dtype.kind != "c":
            return MetaArray(shape, dtype, x.strides, x.offset)
        half = dtype.itemsize  # complex strides in units of the real parts
        st = tuple(2 * s * half for s in est) + ((half,) if name == "view_as_real" else ())
        return MetaArray(shape, dtype, st, 2 * x.offset + (name == "imag"))
    if name in ("view_as_complex", "view_dtype"):
        if name == "view_dtype" and dtype.itemsize == it:
            return MetaArray(shape, dtype, x.strides, x.offset)
        return MetaArray(shape, dtype, offset=x.offset * it // dtype.itemsize)
    if name == "view":
        st = view_strides(x.shape, x.strides, shape, it)
        if st is None:
            raise RuntimeError("view size is not compatible with input tensor's size and stride "
                               "(at least one dimension spans across two contiguous subspaces). "
                               "Use .reshape(...) instead.")
        return MetaArray(shape, dtype, st, x.offset)
    # the view's own kernel on a stand-in of zero-byte elements: strides come out in elements
    # and no memory is read
    fake = x.stand_in()
    try:
        v = op.kernel(np, fake, **params)
    except (TypeError, ValueError, AttributeError):
        return MetaArray(shape, dtype)  # a kernel a stand-in cannot serve: a dense result
    off = v.__array_interface__["data"][0] - fake.__array_interface__["data"][0]
    return MetaArray(shape, dtype, tuple(s * dtype.itemsize for s in v.strides), x.offset + off)


def view_strides(shape, strides, new, itemsize):
    """The strides (bytes) of a ``new``-shaped view of an array of ``shape`` and ``strides``,
    as torch's ``view`` computes them, or None where no view exists.  (NumPy's stand-in
    cannot answer that for meta: it copies every zero-byte element before refusing, and it
    strides size-1 dims otherwise.)"""
    new = tuple(new)
    if not shape:
        return (itemsize,) * len(new)
    st = [s // itemsize for s in strides]
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        if tuple(shape) == new:
            return tuple(strides)
        return contiguous_strides(new, itemsize)
    out = [0] * len(new)
    v = len(new) - 1
    # walk the old dims from the innermost, in chunks that are contiguous among themselves;
    # each chunk must be covered exactly by a run of new dims
    base, numel, view_numel = st[-1], 1, 1
    for d in range(len(shape) - 1, -1, -1):
        numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and st[d - 1] != numel * base):
            while v >= 0 and (view_numel < numel or new[v] == 1):
                out[v] = view_numel * base
                view_numel *= new[v]
                v -= 1
            if view_numel != numel:
                return None
            if d > 0:
                base, numel, view_numel = st[d - 1], 1, 1
    if v != -1:
        return None
    return tuple(s * itemsize for s in out)


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)
