"""How RPC messages are encoded: pickle protocol 5 with tensors as out-of-band raw buffers,
and a loader that only resolves names a program may legitimately send.

Beyond torch, whose RPC unpickles whatever a peer sends: a worker refuses to load any
global that is not

* a module-level function or class (or a method of one, by qualified name) of the
  program's own modules, i.e. modules already imported that live outside the Python
  standard library and site-packages (``__main__``/``__mp_main__`` included);
* part of ember, except the entry points that touch files, processes or code generation
  (`_DENIED_EMBER`);
* one of the few standard-library and NumPy names that plain data needs to rebuild
  (containers, ``functools.partial``, array reconstruction) or a builtin exception type.

Dunder attributes are never resolved and no module is imported on a peer's behalf, so a
message naming ``os.system``, ``builtins.eval`` or ``subprocess.Popen`` fails to load with
`pickle.UnpicklingError` and the caller gets that error back.
"""
import builtins
import importlib
import io
import os
import pickle
import struct
import sys
import sysconfig
import threading

import numpy as np

_SAFE_BUILTINS = {"list", "dict", "tuple", "set", "frozenset", "int", "float", "complex",
                  "bool", "str", "bytes", "bytearray", "slice", "range", "object", "type",
                  "NoneType", "Ellipsis"}
_SAFE_GLOBALS = {
    ("collections", "OrderedDict"), ("collections", "defaultdict"), ("collections", "deque"),
    ("functools", "partial"), ("datetime", "timedelta"), ("datetime", "datetime"),
    ("copyreg", "_reconstructor"), ("_pickle", "UnpicklingError"), ("pickle", "UnpicklingError"),
    ("_pickle", "PicklingError"), ("pickle", "PicklingError"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
}
_DENIED_EMBER = ("ember.hub", "ember.utils.cpp_extension", "ember.multiprocessing",
                 "ember.distributed.run", "ember.distributed._launcher_util",
                 "ember._core.ckernels",
                 "ember.serialization", "ember._serialization", "ember.fx", "ember.jit",
                 "ember._dynamo", "ember._inductor", "ember.compat", "ember.export",
                 "ember.utils.benchmark", "ember.utils.data._worker")
_DENIED_EMBER_NAMES = {("ember", "save"), ("ember", "load"), ("ember", "compile")}


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.realpath(p))
    for p in sys.path:
        if "site-packages" in p or "dist-packages" in p:
            dirs.add(os.path.realpath(p))
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


_LIB_DIRS = None


def _is_program_module(mod):
    global _LIB_DIRS
    name = mod.__name__
    if name in ("__main__", "__mp_main__"):
        return True
    f = getattr(mod, "__file__", None)
    if not f:
        return False
    if _LIB_DIRS is None:
        _LIB_DIRS = _library_dirs()
    return not os.path.realpath(f).startswith(_LIB_DIRS)


def _is_ember(name):
    return name == "ember" or name.startswith("ember.")


def check_global(module, qualname):
    """The object ``module.qualname`` if a peer may name it; else UnpicklingError."""
    parts = qualname.split(".")
    if any(p.startswith("__") and p.endswith("__") for p in parts) or "<" in qualname:
        raise pickle.UnpicklingError(f"RPC refused to load {module}.{qualname}: dunder and local "
                                     f"names are never resolved for a peer")
    allowed = False
    if module == "builtins":
        obj = getattr(builtins, parts[0], None) if len(parts) == 1 else None
        allowed = qualname in _SAFE_BUILTINS or (
            isinstance(obj, type) and issubclass(obj, BaseException))
    elif (module, qualname) in _SAFE_GLOBALS:
        allowed = True
    elif _is_ember(module):
        allowed = not (module.startswith(_DENIED_EMBER) or (module, parts[0]) in
                       _DENIED_EMBER_NAMES)
    else:
        mod = sys.modules.get(module)
        allowed = mod is not None and _is_program_module(mod)
    mod = sys.modules.get(module)
    if allowed and mod is None and _is_ember(module):
        mod = importlib.import_module(module)  # ember's own modules load on demand
    if not allowed or mod is None:
        why = "not imported by this program" if mod is None and allowed else \
            "not a function or class of the program"
        raise pickle.UnpicklingError(f"RPC refused to load {module}.{qualname}: {why} (only the "
                                     f"program's own module-level functions and classes, ember's, "
                                     f"and plain data types may be sent)")
    obj = mod
    for p in parts:
        obj = getattr(obj, p)
    if _is_ember(module) and getattr(obj, "__module__", module) and \
            str(getattr(obj, "__module__", module)).startswith(_DENIED_EMBER):
        raise pickle.UnpicklingError(f"RPC refused to load {module}.{qualname}")
    return obj


# ---- tensors ---------------------------------------------------------------------------
_TLS = threading.local()


def _array(buf, dtype, shape):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        import ml_dtypes
        dt = np.dtype(getattr(ml_dtypes, dtype))
    return np.frombuffer(buf, dtype=dt).reshape(shape)


def _rebuild_tensor(buf, dtype, shape, requires_grad, slot):
    """A tensor from its raw buffer; ``slot`` >= 0 marks one that distributed autograd tracks."""
    from .._ember import from_numpy
    t = from_numpy(_array(buf, dtype, shape))
    if slot >= 0:
        t.requires_grad_(True)
        received = getattr(_TLS, "received", None)
        if received is not None:
            received.append((slot, t))
    elif requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(buf, dtype, shape, requires_grad, slot):
    from ...nn.parameter import Parameter
    p = Parameter(_rebuild_tensor(buf, dtype, shape, False, -1),
                  requires_grad=requires_grad or slot >= 0)
    received = getattr(_TLS, "received", None)
    if slot >= 0 and received is not None:
        received.append((slot, p))
    return p


class _Pickler(pickle.Pickler):
    def __init__(self, f, buffers, reducers, track):
        super().__init__(f, protocol=5, buffer_callback=buffers.append)
        self._reducers = reducers
        self._track = track
        self.tracked = []

    def reducer_override(self, obj):
        from ..._core.tensor import Tensor
        if isinstance(obj, Tensor):
            from ...nn.parameter import Parameter
            arr = np.ascontiguousarray(obj.detach().numpy())
            slot = -1
            if self._track and obj.requires_grad:
                slot = len(self.tracked)
                self.tracked.append(obj)
            fn = _rebuild_parameter if isinstance(obj, Parameter) else _rebuild_tensor
            return fn, (pickle.PickleBuffer(arr.reshape(-1).view(np.uint8)), arr.dtype.name,
                        tuple(obj.shape), bool(obj.requires_grad), slot)
        for cls, red in self._reducers:
            if isinstance(obj, cls):
                return red(obj)
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        return check_global(module, name)


def dumps(obj, reducers=(), track=False):
    """(frame bytes, tensors that require grad in the order they were tracked)."""
    buffers = []
    f = io.BytesIO()
    p = _Pickler(f, buffers, reducers, track)
    p.dump(obj)
    raws = [b.raw() for b in buffers]
    body = f.getvalue()
    head = struct.pack(f"<I{len(raws) + 1}Q", len(raws), len(body), *[r.nbytes for r in raws])
    # a NumPy buffer: filling a fresh bytearray through memoryview slices runs several
    # times slower than NumPy's copy for tensor-sized frames
    out = np.empty(len(head) + len(body) + sum(r.nbytes for r in raws), np.uint8)
    out[:len(head)] = np.frombuffer(head, np.uint8)
    pos = len(head)
    for chunk in [memoryview(body)] + raws:
        out[pos:pos + chunk.nbytes] = np.frombuffer(chunk.cast("B"), np.uint8)
        pos += chunk.nbytes
    return out, p.tracked


def loads(frame):
    """(object, [(slot, tensor)] of received tensors that distributed autograd tracks)."""
    view = memoryview(frame)
    (n,) = struct.unpack_from("<I", view, 0)
    sizes = struct.unpack_from(f"<{n + 1}Q", view, 4)
    pos = 4 + 8 * (n + 1)
    body = view[pos:pos + sizes[0]]
    pos += sizes[0]
    bufs = []
    for s in sizes[1:]:
        bufs.append(view[pos:pos + s])
        pos += s
    prev = getattr(_TLS, "received", None)
    _TLS.received = []
    try:
        obj = _Unpickler(io.BytesIO(body), buffers=bufs).load()
        return obj, _TLS.received
    finally:
        _TLS.received = prev
