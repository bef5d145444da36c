"""detect_anomaly / set_detect_anomaly: forward tracebacks on backward errors, NaN checks."""
from .._core.state import SHARED

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]

_CHECK_NAN = [True]  # whether anomaly mode also raises on NaN gradients (process-wide)


def is_anomaly_enabled():
    return SHARED.anomaly


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection also checks gradients for NaN."""
    return _CHECK_NAN[0]


def set_anomaly_enabled(enabled, check_nan=True):
    """Turns anomaly detection on or off (``check_nan``: whether it checks for NaN too)."""
    SHARED.anomaly = bool(enabled)
    _CHECK_NAN[0] = bool(check_nan)


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine: errors in
    backward show the traceback of the forward operation, and NaN gradients raise."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = SHARED.anomaly, _CHECK_NAN[0]
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)


class set_detect_anomaly:
    """Sets anomaly detection on or off (immediately, and as a context manager)."""

    def __init__(self, mode, check_nan=True):
        self.prev = SHARED.anomaly, _CHECK_NAN[0]
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
