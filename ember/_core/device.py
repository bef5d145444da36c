"""Devices and the backend registry.

A backend owns an array namespace (``xp``) and the array type that stores its
tensors.  Kernels never import NumPy by name for anything that depends on the
device: they receive the namespace of their inputs.  'cpu' is NumPy; further
backends (a CuPy 'cuda', or a third-party PrivateUse1-style device) register
here with `register_backend`.  'meta' (``meta_device``) registers the same way: its
arrays are metadata only, and the dispatcher runs shape rules instead of kernels on them.
"""
import numpy as np

__all__ = ["device", "register_backend", "backend_for_array", "backend_for_type", "get_backend",
           "namespace_of",
           "set_default_device", "get_default_device", "DEFAULT_DEVICE"]

# the device factory functions use when given none: set_default_device, or the innermost
# ``with device(...)`` block (None: the CPU, with no per-call cost)
DEFAULT_DEVICE = [None]
_DEVICE_STACK = []


class Backend:
    __slots__ = ("name", "xp", "array_type", "to_host", "from_host")

    def __init__(self, name, xp, array_type, to_host, from_host):
        self.name = name
        self.xp = xp
        self.array_type = array_type
        self.to_host = to_host
        self.from_host = from_host


_BACKENDS = {}
_BY_TYPE = {}  # array type -> backend, filled lazily
XP_BY_ARRAY_TYPE = {}


def register_backend(name, xp, array_type, to_host=None, from_host=None):
    """Register a device type ``name`` whose tensors are ``array_type`` arrays of namespace ``xp``.

    Beyond PyTorch: this is ember's whole third-party device API (the role of
    PyTorch's PrivateUse1 hooks) -- a namespace that speaks the array API suffices.
    """
    b = Backend(name, xp, array_type, to_host or (lambda a: a), from_host or (lambda a: a))
    _BACKENDS[name] = b
    _BY_TYPE.clear()
    XP_BY_ARRAY_TYPE[array_type] = xp
    return b


register_backend("cpu", np, np.ndarray)


def accelerator_name():
    """The accelerator's device type: the first backend registered besides "cpu" and "meta"
    (meta tensors have no memory), or None on a CPU-only machine."""
    for name in _BACKENDS:
        if name not in ("cpu", "meta"):
            return name
    return None


def get_backend(name):
    try:
        return _BACKENDS[name]
    except KeyError:
        raise RuntimeError(f"Expected one of {', '.join(_BACKENDS)} device type at start of "
                           f"device string: {name}") from None


def backend_for_type(array_type):
    """The backend storing arrays of ``array_type``, or None.  Subclasses (np.memmap, a
    backend whose arrays subclass ndarray) resolve to the most specific registered type."""
    b = _BY_TYPE.get(array_type)
    if b is None:
        matches = [bk for bk in _BACKENDS.values() if issubclass(array_type, bk.array_type)]
        if not matches:
            return None
        b = _BY_TYPE[array_type] = max(matches, key=lambda bk: len(bk.array_type.__mro__))
    return b


def namespace_of(a):
    """The array namespace computing on ``a``; NumPy for anything no backend stores (host
    values, and the storage-less metadata of vmap's logical tensors)."""
    xp = XP_BY_ARRAY_TYPE.get(type(a))
    if xp is None:
        b = backend_for_type(type(a))
        xp = np if b is None else b.xp
    return xp


def backend_for_array(a):
    b = backend_for_type(type(a))
    if b is None:
        real = getattr(a, "__ember_array__", None)
        if real is not None:  # a stand-in for an array not computed yet (ember.compile)
            return backend_for_array(real())
        raise TypeError(f"no ember backend stores arrays of type {type(a).__name__}")
    return b


class device:
    """The device a tensor lives on (``torch.device``): ``device('cpu')``, ``device('cuda', 0)``."""
    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int):
            raise RuntimeError("device index without a type is ambiguous; use device('cpu')")
        elif ":" in type:
            type, _, idx = type.partition(":")
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was "
                                   "passed explicitly: " + type)
            index = int(idx)
        get_backend(type)
        self.type = type
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and \
            (self.index == other.index or None in (self.index, other.index))

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """``with ember.device('cuda'):`` makes factory functions create tensors on this
        device inside the block (torch's device context manager)."""
        _DEVICE_STACK.append(DEFAULT_DEVICE[0])
        DEFAULT_DEVICE[0] = None if self.type == "cpu" and self.index in (None, 0) else self
        return self

    def __exit__(self, *exc):
        DEFAULT_DEVICE[0] = _DEVICE_STACK.pop()
        return False


def set_default_device(device):
    """Sets the device that factory functions (``zeros``, ``tensor``, ``randn``, ...) create
    tensors on when no ``device`` is given; None restores the CPU."""
    if device is None:
        DEFAULT_DEVICE[0] = None
        return
    d = device if isinstance(device, globals()["device"]) else globals()["device"](device)
    DEFAULT_DEVICE[0] = None if d.type == "cpu" and d.index in (None, 0) else d


def get_default_device():
    """The device new tensors are created on by default."""
    d = DEFAULT_DEVICE[0]
    return CPU if d is None else d


CPU = device("cpu")
