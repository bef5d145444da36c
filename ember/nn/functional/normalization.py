"""Normalization: batch_norm, layer_norm, group_norm, instance_norm, rms_norm,
local_response_norm.

The statistics-based norms share one fused primitive, ``_normalize(x, dims)``
(``ember.ops.nn.normalization``), returning (xhat, mean, rstd) in one pass.  The
affine part is one ``addcmul``; eager layer_norm with weight and bias (no dispatch mode
active) is one op instead, torch's ``native_layer_norm``, one C pass each way.  Batch norm
is torch's functional ATen operators (``ember.ops.nn.batch_norm``: one node each in a
captured graph), whose new running statistics are written back into the buffers.
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ..._core.state import STATE
from ...autograd.grad_mode import no_grad
# _normalize_kernel stays importable here for the C-kernel tests
from ...ops.nn.normalization import (_normalize_kernel, native_layer_norm,  # noqa: F401
                                      normalize_stats)
from ...ops.nn.batch_norm import (BATCH_NORM_FUNCTIONAL, BATCH_NORM_NO_STATS,
                                  BATCH_NORM_NO_TRAINING)
from ...ops._helpers import not_implemented, type_name
from ...ops._nondiff import refuse_grad
from .conv import pad
from .pooling import avg_pool2d

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm",
           "local_response_norm"]


def _affine(y, weight, bias, shape):
    if weight is not None:
        weight = weight.reshape(shape)
    if bias is not None:
        bias = bias.reshape(shape)
    if weight is not None and bias is not None:
        return bias.addcmul(y, weight)
    if weight is not None:
        return y * weight
    if bias is not None:
        return y + bias
    return y


def _mixed_params(input, *params):
    """torch's CPU rule for parameters of another dtype than ``input``, judged by the first
    one given: "mixed" (True) is float32 parameters of a float16/bfloat16 input, computed
    in float32 and returned in the input's dtype; any other mix is refused."""
    given = [p for p in params if p is not None]
    if not given or given[0].dtype == input.dtype:
        for p in given[1:]:
            if p.dtype != input.dtype:
                raise RuntimeError(f"expected scalar type {type_name(input.dtype)} but found "
                                   f"{type_name(p.dtype)}")
        return False
    if any(p.dtype != _dt.float32 for p in given):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype not in (_dt.float16, _dt.bfloat16):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return True


def _check_floating(name, input):
    if not input.dtype.is_floating_point:
        not_implemented(name, input.dtype)


def _channel_shape(input):
    return (input.shape[1],) + (1,) * (input.dim() - 2)


def _check_channel_param(name, t, C):
    if t is not None and t.numel() != C:
        raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")


def _update_running(running, new, momentum):
    with no_grad():
        running.mul_(1 - momentum).add_(new.to(running.dtype).reshape(running.shape) * momentum)


@overridable
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Apply Batch Normalization for each channel across a batch of data."""
    return batch_norm_with_stats(input, running_mean, running_var, weight, bias, training,
                                 momentum, eps)[0]


def batch_norm_with_stats(input, running_mean, running_var, weight, bias, training, momentum,
                          eps):
    """`batch_norm`, also returning the batch mean and inverse standard deviation it
    normalised with (per channel; None in evaluation), as ATen's native_batch_norm does."""
    if input.dim() < 2:
        raise ValueError(f"Expected 2D or higher input (got {input.dim()}D input)")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channel_param(name, t, C)
    momentum = 0.0 if momentum is None else float(momentum)
    eps = float(eps)
    n = input.numel() // C if C else 0
    if training and n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    _check_floating("batch_norm", input)
    refuse_grad("native_batch_norm", running_mean=running_mean, running_var=running_var)
    _mixed_params(input, weight, bias, running_mean, running_var)
    if training:
        if running_mean is None or running_var is None:
            out, mean, rstd = BATCH_NORM_NO_STATS(input, weight, bias, training=True,
                                                  momentum=momentum, eps=eps)
            if running_mean is not None:   # only one of the two: torch updates that one
                _update_running(running_mean, mean.detach(), momentum)
            if running_var is not None:
                r = rstd.detach().double()
                _update_running(running_var, (1.0 / (r * r) - eps) * (n / (n - 1)), momentum)
            return out, mean, rstd
        out, mean, rstd, new_mean, new_var = BATCH_NORM_FUNCTIONAL(
            input, weight, bias, running_mean, running_var, training=True, momentum=momentum,
            eps=eps)
        with no_grad():
            running_mean.copy_(new_mean)
            running_var.copy_(new_var)
        return out, mean, rstd
    if running_mean is None or running_var is None:
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    return BATCH_NORM_NO_TRAINING(input, weight, bias, running_mean, running_var,
                                  momentum=momentum, eps=eps)[0], None, None


@overridable
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Apply Instance Normalization independently for each channel in every data sample."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher input (got {input.dim()}D input)")
    C = input.shape[1]
    shape = _channel_shape(input)
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    dims = tuple(range(2, input.dim()))
    n = 1
    for d in dims:
        n *= input.shape[d]
    if n <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    _check_floating("batch_norm", input)
    refuse_grad("native_batch_norm", running_mean=running_mean, running_var=running_var)
    mixed = _mixed_params(input, weight, bias, running_mean, running_var)
    xhat, mean, rstd = normalize_stats(input, dims, eps)
    if running_mean is not None:
        _update_running(running_mean, mean.detach().reshape(-1, C).mean(0), momentum)
    if running_var is not None:
        r = rstd.detach().double()
        var = (1.0 / (r * r) - eps) * (n / (n - 1))
        _update_running(running_var, var.reshape(-1, C).mean(0), momentum)
    y = _affine(xhat, weight, bias, shape)
    return y.to(input.dtype) if mixed else y


def _norm_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(int(s) for s in normalized_shape)


def _check_trailing(input, ns, weight, bias):
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(ns)}")
    if input.dim() < k or tuple(input.shape[-k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")


@overridable
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Apply Layer Normalization over the last dimensions given by ``normalized_shape``."""
    ns = _norm_shape(normalized_shape)
    _check_trailing(input, ns, weight, bias)
    mixed = _mixed_params(input, weight, bias)
    if weight is not None and bias is not None and not mixed and not STATE.intercept:
        # eager without a mode: one fused op (one node); modes see the composite below
        return native_layer_norm(input, weight, bias, ns, eps)[0]
    nd = input.dim()
    xhat = normalize_stats(input, tuple(range(nd - len(ns), nd)), eps)[0]
    y = _affine(xhat, weight, bias, ns)
    return y.to(input.dtype) if mixed else y


@overridable
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Apply Group Normalization over groups of channels."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    N, C = input.shape[:2]
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    _check_channel_param("weight", weight, C)
    _check_channel_param("bias", bias, C)
    mixed = _mixed_params(input, weight, bias)
    xhat = normalize_stats(input.reshape(N, num_groups, -1), (2,), eps)[0]
    y = _affine(xhat.reshape(input.shape), weight, bias, _channel_shape(input))
    return y.to(input.dtype) if mixed else y


@overridable
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Apply Root Mean Square Layer Normalization over the last dimensions."""
    ns = _norm_shape(normalized_shape)
    _check_trailing(input, ns, weight, None)
    if eps is None:
        dt = input.dtype.np
        eps = float(np.finfo(np.float32 if dt.kind == "V" else dt).eps)
    nd = input.dim()
    dims = tuple(range(nd - len(ns), nd))
    y = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return y if weight is None else y * weight


@overridable
def local_response_norm(input, size, alpha=0.0001, beta=0.75, k=1.0):
    """Apply local response normalization over an input signal, across channels."""
    d = input.dim()
    if d < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {d} dimensions)")
    if input.numel() == 0:
        return input
    B, C = input.shape[:2]
    sq = (input * input).reshape(B, 1, C, -1)
    # average of squares over a channel window centred on each channel (zeros beyond the ends)
    sq = pad(sq, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(sq, (size, 1), stride=1).reshape(input.shape)
    return input / (div * alpha + k).pow(beta)


