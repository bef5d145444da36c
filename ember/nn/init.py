"""``ember.nn.init``: parameter initialisers (``torch.nn.init``).

Every initialiser fills its tensor in place without recording autograd history
and returns it; all random ones take ``generator=``.
"""
import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad as no_grad_ctx

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant",
           "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal", "sparse"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """Return the recommended gain value for the given nonlinearity function."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill the input Tensor with values drawn from the uniform distribution U(a, b)."""
    with no_grad_ctx():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill the input Tensor with values drawn from the normal distribution N(mean, std^2)."""
    with no_grad_ctx():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill the input Tensor with values drawn from a truncated normal distribution."""
    def cdf(v):
        return (1.0 + math.erf(v / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    # rejection sampling in torch's order of draws, so a seeded init gives torch's values:
    # normal draws redrawn where out of [a, b] when that mass is large, else uniform
    # candidates on [a, b] accepted against the normal density
    from .. import ops as _ops
    if tensor.is_meta:
        return tensor  # no values to draw (rejection sampling reads them)
    with no_grad_ctx():
        if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
            lo, hi = (float(v) for v in _ops.tensor([a, b], dtype=tensor.dtype).tolist())
            result = tensor.normal_(mean, std, generator=generator)
            while True:
                mask = (result < lo) | (result > hi)
                if not bool(mask.any()):
                    break
                fresh = _ops.empty_like(result).normal_(mean, std, generator=generator)
                result = _ops.where(mask, fresh, result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        log_peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2

        def log_density(c):
            return c.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        accept = _ops.empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)
        cand = log_density(tensor.clone())
        pending = accept.uniform_(generator=generator).log_().gt(cand)
        result = tensor
        while bool(pending.any()):
            cand = _ops.empty_like(tensor).uniform_(a, b, generator=generator)
            result = _ops.where(pending, cand, result)
            log_density(cand)
            pending = _ops.where(pending, accept.uniform_(generator=generator).log_().gt(cand),
                                 pending)
        if result is not tensor:
            tensor.copy_(result)
        return tensor


def constant_(tensor, val):
    """Fill the input Tensor with the value ``val``."""
    with no_grad_ctx():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill the input Tensor with the scalar value 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill the input Tensor with the scalar value 0."""
    return constant_(tensor, 0.0)


def _write(tensor, arr):
    from .._core.tensor import wrap
    with no_grad_ctx():
        tensor.copy_(wrap(np.asarray(arr, dtype=tensor.dtype.np)))
    return tensor


def eye_(tensor):
    """Fill the 2-dimensional input Tensor with the identity matrix."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """Fill the {3, 4, 5}-dimensional input Tensor with the Dirac delta function."""
    d = tensor.dim()
    if d not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per = sizes[0] // groups
    arr = np.zeros(tuple(sizes))
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for i in range(min(per, sizes[1])):
            arr[(g * per + i, i) + centre] = 1
    return _write(tensor, arr)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Fill the input Tensor using the Xavier (Glorot) uniform initialisation."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Fill the input Tensor using the Xavier (Glorot) normal initialisation."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Fill the input Tensor using the Kaiming (He) uniform initialisation."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """Fill the input Tensor using the Kaiming (He) normal initialisation."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill the input Tensor with a (semi) orthogonal matrix."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from ..ops.random import randn
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flat = randn(rows, cols, generator=generator, dtype=tensor.dtype)._data.astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    # sign fix makes the distribution uniform over orthogonal matrices
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tuple(tensor.shape)))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill the 2D input Tensor as a sparse matrix, non-zero elements drawn from N(0, std^2)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..ops.random import randperm
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    if tensor.is_meta:
        return tensor  # no values to write
    with no_grad_ctx():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            idx = randperm(rows, generator=generator)[:num_zeros]
            tensor[idx, c] = 0
    return tensor


def _deprecated(fn):
    def old(*args, **kwargs):
        new = fn.__name__
        warnings.warn(f"`nn.init.{new[:-1]}` is now deprecated in favor of `nn.init.{new}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)
    old.__name__ = old.__qualname__ = fn.__name__[:-1]
    old.__doc__ = fn.__doc__
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
