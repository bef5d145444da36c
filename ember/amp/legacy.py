"""torch's older per-device autocast switches (``torch.get_autocast_cpu_dtype``,
``torch.set_autocast_cpu_enabled``, ... and the cache/nesting controls), over the state
``autocast`` uses.  IPU and XLA have no backend in ember: their flags are only stored, so
code that saves and restores them round-trips."""
import functools
import warnings

from .._core import dtype as _dt
from . import autocast_mode as _am

__all__ = ["get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "get_autocast_ipu_dtype",
           "get_autocast_xla_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype",
           "set_autocast_ipu_dtype", "set_autocast_xla_dtype", "is_autocast_cpu_enabled",
           "is_autocast_ipu_enabled", "is_autocast_xla_enabled", "set_autocast_cpu_enabled",
           "set_autocast_ipu_enabled", "set_autocast_xla_enabled", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

_OTHER = {"ipu": [False, _dt.float16], "xla": [False, _dt.bfloat16]}


def _deprecated(old, new):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                          DeprecationWarning, stacklevel=2)
            return fn(*args)
        wrapper.__doc__ = f"Deprecated form of ``torch.{new}``."
        return wrapper
    return deco


def _check_bool(name, enabled):
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")


def _check_dtype(name, dtype):
    if not isinstance(dtype, _dt.dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(dtype).__name__})")


@_deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
def get_autocast_cpu_dtype():
    return _am._STATE["cpu"][1]


@_deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
def get_autocast_gpu_dtype():
    return _am._STATE["cuda"][1]


@_deprecated("get_autocast_ipu_dtype()", "get_autocast_dtype('ipu')")
def get_autocast_ipu_dtype():
    return _OTHER["ipu"][1]


@_deprecated("get_autocast_xla_dtype()", "get_autocast_dtype('xla')")
def get_autocast_xla_dtype():
    return _OTHER["xla"][1]


@_deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
def set_autocast_cpu_dtype(dtype):
    _check_dtype("set_autocast_cpu_dtype", dtype)
    _am._STATE["cpu"][1] = dtype


@_deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
def set_autocast_gpu_dtype(dtype):
    _check_dtype("set_autocast_gpu_dtype", dtype)
    _am._STATE["cuda"][1] = dtype


@_deprecated("set_autocast_ipu_dtype(dtype)", "set_autocast_dtype('ipu', dtype)")
def set_autocast_ipu_dtype(dtype):
    _check_dtype("set_autocast_ipu_dtype", dtype)
    _OTHER["ipu"][1] = dtype


@_deprecated("set_autocast_xla_dtype(dtype)", "set_autocast_dtype('xla', dtype)")
def set_autocast_xla_dtype(dtype):
    _check_dtype("set_autocast_xla_dtype", dtype)
    _OTHER["xla"][1] = dtype


@_deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
def is_autocast_cpu_enabled():
    return _am._STATE["cpu"][0]


@_deprecated("is_autocast_ipu_enabled()", "is_autocast_enabled('ipu')")
def is_autocast_ipu_enabled():
    return _OTHER["ipu"][0]


@_deprecated("is_autocast_xla_enabled()", "is_autocast_enabled('xla')")
def is_autocast_xla_enabled():
    return _OTHER["xla"][0]


@_deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
def set_autocast_cpu_enabled(enabled):
    _check_bool("set_autocast_cpu_enabled", enabled)
    _am.set_autocast_enabled("cpu", enabled)


@_deprecated("set_autocast_ipu_enabled(enabled)", "set_autocast_enabled('ipu', enabled)")
def set_autocast_ipu_enabled(enabled):
    _check_bool("set_autocast_ipu_enabled", enabled)
    _OTHER["ipu"][0] = enabled


@_deprecated("set_autocast_xla_enabled(enabled)", "set_autocast_enabled('xla', enabled)")
def set_autocast_xla_enabled(enabled):
    _check_bool("set_autocast_xla_enabled", enabled)
    _OTHER["xla"][0] = enabled


def is_autocast_cache_enabled():
    """Whether autocast regions keep the low-precision casts of leaf weights for reuse."""
    return _am._CACHE_ENABLED[0]


def set_autocast_cache_enabled(enabled):
    _check_bool("set_autocast_cache_enabled", enabled)
    _am._CACHE_ENABLED[0] = enabled


def clear_autocast_cache():
    """Drops the cached low-precision casts (autocast does this leaving its outermost region)."""
    _am._CACHE.clear()


def autocast_increment_nesting():
    _am._DEPTH[0] += 1
    return _am._DEPTH[0]


def autocast_decrement_nesting():
    _am._DEPTH[0] -= 1
    return _am._DEPTH[0]
