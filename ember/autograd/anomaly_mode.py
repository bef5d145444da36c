"""detect_anomaly / set_detect_anomaly: forward tracebacks on backward errors, NaN checks."""
from .._core.state import STATE

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


def is_anomaly_enabled():
    return STATE.anomaly


class detect_anomaly:
    """Context manager that enables anomaly detection for the autograd engine: errors in
    backward show the traceback of the forward operation, and NaN gradients raise."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = STATE.anomaly
        STATE.anomaly = True

    def __exit__(self, *exc):
        STATE.anomaly = self.prev


class set_detect_anomaly:
    """Sets anomaly detection on or off (immediately, and as a context manager)."""

    def __init__(self, mode, check_nan=True):
        self.prev = STATE.anomaly
        STATE.anomaly = bool(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        STATE.anomaly = self.prev
