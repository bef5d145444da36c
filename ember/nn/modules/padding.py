"""Padding layers: Zero/Constant/Reflection/Replication/Circular Pad 1d/2d/3d."""
from .. import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _padding(p, n):
    return tuple(p) if isinstance(p, (list, tuple)) else (p,) * (2 * n)


class _PadNd(Module):
    _mode = "constant"
    _n = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the input tensor boundaries with a constant value."""
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the input tensor boundaries with a constant value."""
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the input tensor boundaries with a constant value."""
    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the input tensor boundaries with zero."""
    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pads the input tensor boundaries with zero."""
    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the input tensor boundaries with zero."""
    _n = 3


def _mode_class(name, mode, n, doc):
    return type(name, (_PadNd,), {"_mode": mode, "_n": n, "__doc__": doc,
                                  "__module__": __name__})


ReflectionPad1d = _mode_class("ReflectionPad1d", "reflect", 1,
                              "Pads the input tensor using the reflection of the input boundary.")
ReflectionPad2d = _mode_class("ReflectionPad2d", "reflect", 2,
                              "Pads the input tensor using the reflection of the input boundary.")
ReflectionPad3d = _mode_class("ReflectionPad3d", "reflect", 3,
                              "Pads the input tensor using the reflection of the input boundary.")
ReplicationPad1d = _mode_class("ReplicationPad1d", "replicate", 1,
                               "Pads the input tensor using replication of the input boundary.")
ReplicationPad2d = _mode_class("ReplicationPad2d", "replicate", 2,
                               "Pads the input tensor using replication of the input boundary.")
ReplicationPad3d = _mode_class("ReplicationPad3d", "replicate", 3,
                               "Pads the input tensor using replication of the input boundary.")
CircularPad1d = _mode_class("CircularPad1d", "circular", 1,
                            "Pads the input tensor using circular padding of the input boundary.")
CircularPad2d = _mode_class("CircularPad2d", "circular", 2,
                            "Pads the input tensor using circular padding of the input boundary.")
CircularPad3d = _mode_class("CircularPad3d", "circular", 3,
                            "Pads the input tensor using circular padding of the input boundary.")
