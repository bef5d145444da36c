"""``ember.accelerator``: the device-agnostic accelerator API (``torch.accelerator``).

The accelerator is the first non-CPU device backend registered with
``ember._core.device.register_backend`` (CuPy's ``cuda`` or a third-party device);
on a CPU-only machine there is none, and every call that needs one raises torch's
error.  ember's backends expose one device each, so the only index is 0.  Stream,
graph and memory-statistics functions are not provided: ember's backends have no
such notions to report.
"""
import contextlib
import warnings

from .._core.device import accelerator_name as _accelerator_name, device as _device

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "device_count",
           "device_index", "is_available", "set_device_idx", "set_device_index", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    """Whether an accelerator device backend is registered."""
    return _accelerator_name() is not None


def device_count():
    """The number of accelerator devices: 0 without an accelerator, else 1."""
    return 0 if _accelerator_name() is None else 1


def current_accelerator(check_available=False):
    """The accelerator's device type as a ``device`` (``device('cuda')``), or None when
    there is none (``check_available`` only matters where one is built in but unusable)."""
    name = _accelerator_name()
    return None if name is None else _device(name)


def _require():
    if _accelerator_name() is None:
        raise RuntimeError(_NONE)


def current_device_index():
    """The index of the current accelerator device (always 0)."""
    _require()
    return 0


def current_device_idx():
    """Deprecated alias of ``current_device_index``."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def _check_index(device):
    _require()
    if isinstance(device, (str, _device)):
        device = _device(device).index or 0
    if device not in (None, 0, -1):
        raise RuntimeError(f"Invalid device index {device}: the accelerator has one device (0)")


def set_device_index(device, /):
    """Sets the current accelerator device (only index 0 exists)."""
    _check_index(device)


def set_device_idx(device, /):
    """Deprecated alias of ``set_device_index``."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


@contextlib.contextmanager
def device_index(device, /):
    """Context manager making ``device`` current; ``None`` is a no-op, as in torch."""
    if device is not None:
        _check_index(device)
    yield


def synchronize(device=None, /):
    """Waits for the accelerator's queued work; backends here compute synchronously."""
    _require()
    if device is not None:
        _check_index(device)
