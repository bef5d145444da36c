"""``torch.utils.deterministic``: the ``fill_uninitialized_memory`` switch.

The module's class is swapped for a subclass with a property, as torch does, so that
``ember.utils.deterministic.fill_uninitialized_memory = False`` sets the process-wide
switch that the factories read.
"""
import sys
import types

from .._core.deterministic import DETERMINISTIC

__all__ = []


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self):
        """Whether to fill uninitialized memory with a known value when
        :meth:`ember.use_deterministic_algorithms()` is set to ``True``: NaN for floating
        point and complex values, the maximum value for integers, True for bool."""
        return DETERMINISTIC["fill_uninitialized_memory"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode):
        if not isinstance(mode, bool):
            raise RuntimeError("expected a bool, but got " + type(mode).__name__)
        DETERMINISTIC["fill_uninitialized_memory"] = mode


sys.modules[__name__].__class__ = _Deterministic
