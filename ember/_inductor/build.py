"""Pass 7, build: compile a graph's C kernels into one shared library with the eager
kernels' machinery (`ember._core.ckernels.build`: atomic writes, an advisory lock, a disk
cache keyed by source hash, compiler, flags and CPU, verified loading; flags ``-O3
-fopenmp`` plus the CPU capability's).  `COUNTERS` says how many libraries this process
compiled and how many it found cached (tests read it to see a cache hit)."""
import ctypes
import shutil

from .._core.ckernels import build as _build
from . import config

__all__ = ["build_library", "COUNTERS", "compiler_available"]

COUNTERS = {"compiled": 0, "cached": 0, "failed": 0}
LAST = {}


_UNSET = object()


def compiler_available(cc_setting=_UNSET):
    """Whether C kernels can be built under the ``cc`` setting (default: ``config.cc``)."""
    cc = config.cc if cc_setting is _UNSET else cc_setting
    if cc is None or cc is False:
        return False
    return _build.find_compiler() is not None if cc == "auto" else bool(shutil.which(str(cc)))


def _check(lib):
    return lib.ek_graph_abi() == 1


_ARGTYPES = {"out": ctypes.c_void_p, "in": ctypes.c_void_p, "sym": ctypes.c_int64,
             "nt": ctypes.c_int}


def build_library(source, kernels_args):
    """``({kernel name: ctypes function}, info)``, or ``(None, reason)`` when no library
    can be built or loaded.  ``kernels_args`` maps each kernel to its `kernel_args` list,
    with scalar arguments as ("name", "scalar", is_float)."""
    try:
        lib, info = _build.build("ember_graph", source, _check)
    except Exception as e:  # noqa: BLE001 - the caller runs the NumPy kernels instead
        COUNTERS["failed"] += 1
        LAST.clear()
        LAST.update(reason=str(e))
        return None, str(e)
    COUNTERS["compiled" if info.get("compiled") else "cached"] += 1
    LAST.clear()
    LAST.update(info)
    fns = {}
    for name, args in kernels_args.items():
        f = getattr(lib, name)
        f.restype = None
        f.argtypes = [(ctypes.c_double if a[2] else ctypes.c_int64) if a[1] == "scalar"
                      else _ARGTYPES[a[1]] for a in args]
        f._lib_handle = lib
        fns[name] = f
    return fns, info
