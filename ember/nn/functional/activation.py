"""Activation functions (``torch.nn.functional`` activations).

Most are primitives of ``ember.ops.nn.activation``; cheap ones (softsign, tanhshrink,
glu, prelu, softmin) are composites here.
"""
import warnings

import numpy as np

from ..._core import dtype as _dt
from ..._core.dispatch import overridable
from ..._core.tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from ...ops._helpers import apply, apply_inplace
from ...ops.creation import empty_like, zeros_like
# _gelu_np and friends stay importable here for the C-kernel tests
from ...ops.nn.activation import (ELU, GELU, HARDSHRINK, HARDSIGMOID, HARDSWISH,  # noqa: F401
                                  HARDTANH, LEAKY_RELU, LOGSIGMOID, MISH, RELU, RRELU, SILU,
                                  SOFTPLUS, SOFTSHRINK, THRESHOLD, _gelu_np, _gelu_vjp,
                                  _silu_np, _silu_vjp)
from ...ops.pointwise import where
from ...ops.softmax import log_softmax as _log_softmax
from ...ops.softmax import softmax as _softmax

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "rrelu_",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "sigmoid",
           "tanh", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "softplus", "softsign",
           "softmax", "log_softmax", "softmin", "glu", "threshold", "threshold_", "tanhshrink",
           "softshrink", "hardshrink", "logsigmoid", "gumbel_softmax"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _run(op, input, inplace, params):
    if inplace:
        return apply_inplace(op, input, (), params)
    return apply(op, (input,), params)


@overridable
def relu(input, inplace=False):
    """Applies the rectified linear unit function element-wise."""
    return _run(RELU, input, inplace, {})


@overridable
def relu_(input):
    return apply_inplace(RELU, input, (), {})


@overridable
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Applies the HardTanh function element-wise."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    # torch checks the limits converted to an integer (-0.5 passes as 0)
    if input.dtype == _dt.uint8 and (int(min_val) < 0 or int(max_val) < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return _run(HARDTANH, input, inplace, {"lo": min_val, "hi": max_val})


@overridable
def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


@overridable
def relu6(input, inplace=False):
    """Applies the element-wise function ReLU6(x) = min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


@overridable
def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Applies LeakyReLU(x) = max(0, x) + negative_slope * min(0, x) element-wise."""
    return _run(LEAKY_RELU, input, inplace, {"slope": negative_slope})


@overridable
def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


@overridable
def elu(input, alpha=1.0, inplace=False):
    """Applies the Exponential Linear Unit function element-wise."""
    return _run(ELU, input, inplace, {"alpha": alpha, "scale": 1.0, "iscale": 1.0})


@overridable
def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


@overridable
def selu(input, inplace=False):
    """Applies SELU(x) = scale * (max(0, x) + min(0, alpha * (exp(x) - 1)))."""
    return _run(ELU, input, inplace, {"alpha": _SELU_ALPHA, "scale": _SELU_SCALE, "iscale": 1.0})


@overridable
def selu_(input):
    return selu(input, True)


@overridable
def celu(input, alpha=1.0, inplace=False):
    """Applies CELU(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    # torch's celu backward computes 1 / alpha from alpha rounded to float32
    return _run(ELU, input, inplace, {"alpha": alpha, "scale": 1.0, "iscale": 1.0 / alpha,
                                      "iscale_grad": 1.0 / float(np.float32(alpha))})


@overridable
def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


@overridable
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in eval."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    out, _ = apply(RRELU, (input,), {"lower": lower, "upper": upper})
    if inplace:
        from ..._core.dispatch import copy_into
        copy_into(input, out._data)
        return input
    return out


@overridable
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


@overridable
def prelu(input, weight):
    """Applies PReLU(x) = max(0, x) + weight * min(0, x), weight per channel (dim 1)."""
    n = weight.numel()
    if n != 1:
        if input.dim() == 0 or input.shape[1 if input.dim() > 1 else 0] != n:
            c = input.shape[1] if input.dim() > 1 else (input.shape[0] if input.dim() else 1)
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {c}.")
        w = weight.reshape((n,) + (1,) * (input.dim() - 2)) if input.dim() > 1 else weight
    else:
        w = weight.reshape(()) if weight.dim() else weight
    return where(input > 0, input, w * input)


# ---- smooth activations -----------------------------------------------------------------
@overridable
def gelu(input, approximate="none"):
    """Applies the Gaussian Error Linear Units function (exact, or tanh-approximated)."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return apply(GELU, (input,), {"tanh": approximate == "tanh"})


@overridable
def silu(input, inplace=False):
    """Applies the Sigmoid Linear Unit (SiLU) function, x * sigmoid(x), element-wise."""
    if input.is_complex() and input.requires_grad and is_grad_enabled():
        raise RuntimeError("silu does not support automatic differentiation for outputs with "
                           "complex dtype.")
    return _run(SILU, input, inplace, {})


@overridable
def softplus(input, beta=1.0, threshold=20.0):
    """Applies Softplus(x) = 1/beta * log(1 + exp(beta * x)), linear above ``threshold``."""
    return apply(SOFTPLUS, (input,), {"beta": beta, "threshold": threshold})


@overridable
def mish(input, inplace=False):
    """Applies Mish(x) = x * tanh(softplus(x)) element-wise."""
    return _run(MISH, input, inplace, {})


@overridable
def logsigmoid(input):
    """Applies LogSigmoid(x) = log(1 / (1 + exp(-x))) element-wise, computed stably."""
    return apply(LOGSIGMOID, (input,), {})


@overridable
def hardsigmoid(input, inplace=False):
    """Applies the Hardsigmoid function element-wise: relu6(x + 3) / 6."""
    return _run(HARDSIGMOID, input, inplace, {})


@overridable
def hardswish(input, inplace=False):
    """Applies the Hardswish function element-wise: x * relu6(x + 3) / 6."""
    return _run(HARDSWISH, input, inplace, {})


@overridable
def threshold(input, threshold, value, inplace=False):
    """Thresholds each element: x if x > threshold else value."""
    return _run(THRESHOLD, input, inplace, {"th": threshold, "value": value})


@overridable
def threshold_(input, threshold, value):
    return apply_inplace(THRESHOLD, input, (), {"th": threshold, "value": value})


@overridable
def softshrink(input, lambd=0.5):
    """Applies the soft shrinkage function element-wise."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return apply(SOFTSHRINK, (input,), {"lambd": lambd})


@overridable
def hardshrink(input, lambd=0.5):
    """Applies the hard shrinkage function element-wise."""
    return apply(HARDSHRINK, (input,), {"lambd": lambd})


# ---- composites -------------------------------------------------------------------------
@overridable
def sigmoid(input):
    """Applies the element-wise function 1 / (1 + exp(-x))."""
    return input.sigmoid()


@overridable
def tanh(input):
    """Applies the element-wise function tanh(x)."""
    return input.tanh()


@overridable
def tanhshrink(input):
    """Applies Tanhshrink(x) = x - tanh(x) element-wise."""
    return input - input.tanh()


@overridable
def softsign(input):
    """Applies SoftSign(x) = x / (1 + |x|) element-wise."""
    return input / (input.abs() + 1)


@overridable
def glu(input, dim=-1):
    """The gated linear unit: a * sigmoid(b) where input is split in half along ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        d = dim % input.dim()
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.split(n // 2, dim)
    return a * b.sigmoid()


@overridable
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Applies softmax along ``dim``: exp(x) / sum(exp(x))."""
    return _softmax(input, dim, dtype)


@overridable
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Applies log(softmax(x)) along ``dim``, computed stably."""
    return _log_softmax(input, dim, dtype)


@overridable
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """Applies softmin along ``dim``: softmax(-x)."""
    return _softmax(-input, dim, dtype)


@overridable
def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-Softmax distribution over ``dim`` (optionally one-hot).

    ``hard=True`` returns one-hot samples whose gradient is the soft sample's
    (straight-through estimator).  The Gumbel noise is ``-log(Exp(1))``, drawn with
    ``exponential_`` so that a seeded generator gives torch's samples."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    noise = -empty_like(logits).exponential_().log()
    y_soft = _softmax((logits + noise) / tau, dim, None)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# Tensor methods torch has for these activations.
Tensor.relu = lambda self: apply(RELU, (self,), {})
Tensor.relu_ = lambda self: apply_inplace(RELU, self, (), {})
Tensor.hardshrink = lambda self, lambd=0.5: hardshrink(self, lambd)
Tensor.prelu = lambda self, weight: prelu(self, weight)
