"""``torch.amp.custom_fwd`` / ``custom_bwd``: autocast-aware ``forward``/``backward`` of
custom autograd Functions."""
import functools

from .._core.tensor import Tensor
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["custom_fwd", "custom_bwd"]


def _cast(value, device_type, dtype):
    """Floating-point tensors on ``device_type`` (float64 excepted) cast to ``dtype``, through
    lists, tuples and dicts."""
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and \
            value.dtype.name != "float64"
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Create a helper decorator for ``forward`` methods of custom autograd functions.

    If ``cast_inputs`` is None, ``forward`` runs under the ambient autocast state; otherwise,
    inside an autocast-enabled region, its floating-point tensor arguments are cast to
    ``cast_inputs`` and it runs with autocast disabled.  ``backward`` (decorated with
    `custom_bwd`) then runs with the autocast state ``forward`` had."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Create a helper decorator for ``backward`` methods of custom autograd functions: it
    runs under the autocast state of the matching `custom_fwd` ``forward``."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
