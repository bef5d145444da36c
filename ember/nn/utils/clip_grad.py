"""Gradient clipping: by total norm (``clip_grad_norm_``) or by value (``clip_grad_value_``)."""

from ..._core.tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import stack, tensor as _tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _tensors(x):
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _grads(parameters):
    return [p.grad for p in _tensors(parameters) if p.grad is not None]


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Compute the norm of an iterable of tensors, as if concatenated into a single vector."""
    ts = [t for t in _tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if not ts:
        return _tensor(0.0)
    # torch's: the vector norm of each tensor (one fused reduction each), then of their stack
    norms = [t.norm(norm_type) for t in ts]
    total = stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           f"is non-finite, so it cannot be clipped. To disable this error and "
                           f"scale the gradients by the non-finite norm anyway, set "
                           f"`error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by max_norm / total_norm when that is below 1."""
    grads = _grads(parameters)
    if not grads:
        return
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradient norm of an iterable of parameters (in place); returns the total norm
    of the gradients (viewed as a single vector)."""
    params = _tensors(parameters)
    grads = _grads(params)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of `clip_grad_norm_`."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clip the gradients of an iterable of parameters at the specified value (in place)."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(min=-clip_value, max=clip_value)
