"""``torch._C`` under ember.compat: the few of its names that libraries written for torch
call as plain Python (Pyro asks ``torch._C._get_tracing_state()`` before every JIT-sensitive
step).  torch's C++ internals are otherwise not ember's: any other name is an
AttributeError that says so.  ``ember.compat.install()`` sets it as ``torch._C``; plain
``import ember`` never has it.
"""
from .._core.device import get_default_device as _default_device
from .._core.overrides import disabled_torch_function_impl as _disabled_torch_function_impl
from ..func import _transforms, _vmap_mode
from ..jit._state import is_tracing
from ..linalg import LinAlgError as _LinAlgError

__all__ = []


class _TracingState:
    """What ``_get_tracing_state()`` returns while ``jit.trace`` records (true)."""

    def __repr__(self):
        return "<ember.jit tracing state>"


_TRACING = _TracingState()


def _get_tracing_state():
    """The JIT tracing state: None unless ``jit.trace`` is recording the calling code."""
    return _TRACING if is_tracing() else None


def _log_api_usage_once(event):
    """torch's API-usage logging hook (telemetry off by default): nothing to do."""


def _are_functorch_transforms_active():
    """True while an ``ember.func`` transform (grad, vjp, jvp, jacrev, vmap, ...) runs the
    calling code (kornia switches to transform-safe code paths then)."""
    return _transforms._ALL_DEPTH[0] > 0 or _vmap_mode.current_level() > 0


def _get_default_device():
    """The default device's name ("cpu" unless ``set_default_device`` changed it)."""
    return str(_default_device())


def __getattr__(name):
    raise AttributeError(f"module 'torch._C' has no attribute {name!r} (ember.compat provides "
                         f"only {', '.join(sorted(_NAMES))} of torch's C++ internals)")


_NAMES = ("_get_tracing_state", "_log_api_usage_once", "_LinAlgError",
          "_disabled_torch_function_impl", "_are_functorch_transforms_active",
          "_get_default_device")
