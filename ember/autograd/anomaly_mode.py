"""detect_anomaly / set_detect_anomaly: forward tracebacks on backward errors, NaN checks."""
from .._core.state import SHARED

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


def is_anomaly_enabled():
    return SHARED.anomaly


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine: errors in
    backward show the traceback of the forward operation, and NaN gradients raise."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = SHARED.anomaly
        SHARED.anomaly = True

    def __exit__(self, *exc):
        SHARED.anomaly = self.prev


class set_detect_anomaly:
    """Sets anomaly detection on or off (immediately, and as a context manager)."""

    def __init__(self, mode, check_nan=True):
        self.prev = SHARED.anomaly
        SHARED.anomaly = bool(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        SHARED.anomaly = self.prev
