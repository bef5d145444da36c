"""``torch.cuda.amp``: the deprecated CUDA spellings of ``ember.amp``.

``GradScaler(...)`` is ``ember.amp.GradScaler("cuda", ...)`` and ``autocast(...)`` is
``ember.autocast("cuda", ...)``, with torch's deprecation warnings; without a CUDA
backend both disable themselves with torch's warning, so CPU scripts run unchanged.
"""
import warnings

from .. import amp as _amp
from .._core import dtype as _dt

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd",
           "GradScaler"]


def amp_definitely_not_available():
    """True when no CUDA backend is registered (CUDA AMP cannot run)."""
    from . import is_available
    return not is_available()


class GradScaler(_amp.GradScaler):
    """``ember.amp.GradScaler("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


class autocast(_amp.autocast):
    """``ember.autocast("cuda", ...)`` (deprecated spelling); disabled without CUDA."""

    def __init__(self, enabled=True, dtype=_dt.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        if enabled and amp_definitely_not_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          stacklevel=2)
            enabled = False
        if not enabled:
            super().__init__("cpu", enabled=False)
        else:
            super().__init__("cuda", dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``ember.amp.custom_fwd(..., device_type="cuda")`` (deprecated spelling)."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``ember.amp.custom_bwd(..., device_type="cuda")`` (deprecated spelling)."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _amp.custom_bwd(bwd, device_type="cuda")
