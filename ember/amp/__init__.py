"""``torch.amp``: automatic mixed precision (autocast regions and gradient scaling)."""
from .autocast_mode import (autocast, is_autocast_available, is_autocast_enabled,
                            get_autocast_dtype, set_autocast_enabled, set_autocast_dtype)
from .grad_scaler import GradScaler
from .custom_function import custom_bwd, custom_fwd

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "set_autocast_enabled", "set_autocast_dtype", "custom_fwd",
           "custom_bwd"]
