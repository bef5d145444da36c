"""``torch.cpu.amp``: the deprecated CPU spellings of ``ember.amp``.

``autocast(...)`` is ``ember.autocast("cpu", ...)`` (bfloat16 by default) and
``GradScaler(...)`` is ``ember.amp.GradScaler("cpu", ...)``, each with torch's
FutureWarning.
"""
import warnings

from .. import amp as _amp
from .._core import dtype as _dt

__all__ = ["autocast", "GradScaler"]


class autocast(_amp.autocast):
    """``ember.autocast("cpu", ...)`` (deprecated spelling)."""

    def __init__(self, enabled=True, dtype=_dt.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``ember.amp.GradScaler("cpu", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
