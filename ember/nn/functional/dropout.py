"""Dropout variants (``torch.nn.functional`` dropout family).

Plain dropout is one fused primitive (``ember.ops.nn.dropout``).  Feature (channel-wise)
and alpha variants draw a mask with a non-differentiable op and combine it with ember
ops.  Masks come from ember's default generator (``ember.manual_seed`` makes them
reproducible).
"""
import warnings

import numpy as np

from ..._core.dispatch import overridable
from ...ops._helpers import apply
from ...ops.nn.dropout import DROPOUT, DROPOUT_MASK

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]

_SELU_ALPHA_SCALE = 1.7580993408473766  # SELU's alpha * scale: the value SELU saturates to


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _impl(input, p, training, inplace, feature, alpha):
    _check_p(p)
    if not training or p == 0:
        return input
    if feature:
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    if not alpha:
        if not feature and not inplace:
            return apply(DROPOUT, (input,), {"p": float(p)})[0]
        noise = apply(DROPOUT_MASK, (input,), {"p": float(p), "shape": shape})
        noise = noise * (0.0 if p == 1 else 1.0 / (1.0 - p))
        return input.mul_(noise) if inplace else input * noise
    noise = apply(DROPOUT_MASK, (input,), {"p": float(p), "shape": shape})
    if p == 1:
        return input.mul_(noise * 0) if inplace else input * (noise * 0)
    a = 1.0 / np.sqrt((_SELU_ALPHA_SCALE ** 2 * p + 1) * (1 - p))
    b = (noise - 1) * (_SELU_ALPHA_SCALE * a) + _SELU_ALPHA_SCALE * a * p
    noise = noise * a
    return input.mul_(noise).add_(b) if inplace else input * noise + b


@overridable
def dropout(input, p=0.5, training=True, inplace=False):
    """Randomly zeroes elements with probability ``p`` and scales the rest by 1 / (1 - p)."""
    return _impl(input, p, training, inplace, False, False)


def _feature_nd(name, input, p, training, inplace, batched_dim, alpha=False):
    d = input.dim()
    if d not in (batched_dim - 1, batched_dim):
        raise RuntimeError(f"{name}: Expected {batched_dim - 1}D or {batched_dim}D input, but "
                           f"received a {d}D input. Note that {name} exists to provide channel-"
                           f"wise dropout on inputs with {batched_dim - 2} spatial dimension"
                           f"{'s' if batched_dim > 3 else ''}, a channel dimension, and an "
                           f"optional batch dimension (i.e. {batched_dim - 1}D or "
                           f"{batched_dim}D inputs).")
    if d == batched_dim:
        return _impl(input, p, training, inplace, True, alpha)
    _check_p(p)
    if not training or p == 0:
        return input
    r = _impl(input.unsqueeze(0), p, training, False, True, alpha).squeeze(0)
    return input.copy_(r) if inplace else r


@overridable
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Randomly zeroes whole channels of a (N, C, L) or (C, L) input."""
    return _feature_nd("dropout1d", input, p, training, inplace, 3)


@overridable
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Randomly zeroes whole channels of a (N, C, H, W) or (C, H, W) input."""
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and "
                      f"will result in an error in a future release. To retain the behavior and "
                      f"silence this warning, please use dropout instead. Note that dropout2d "
                      f"exists to provide channel-wise dropout on inputs with 2 spatial "
                      f"dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"3D or 4D inputs).", UserWarning, stacklevel=2)
    if d == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape "
                      "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch "
                      "to using dropout1d instead.", UserWarning, stacklevel=2)
    return _impl(input, p, training, inplace, d >= 2, False)


@overridable
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Randomly zeroes whole channels of a (N, C, D, H, W) or (C, D, H, W) input."""
    d = input.dim()
    if d not in (4, 5):
        warnings.warn(f"dropout3d: Received a {d}-D input to dropout3d, which is deprecated and "
                      f"will result in an error in a future release. To retain the behavior and "
                      f"silence this warning, please use dropout instead. Note that dropout3d "
                      f"exists to provide channel-wise dropout on inputs with 3 spatial "
                      f"dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"4D or 5D inputs).", UserWarning, stacklevel=2)
    if d == 4:
        _check_p(p)
        if not training or p == 0:
            return input
        r = _impl(input.unsqueeze(0), p, training, False, True, False).squeeze(0)
        return input.copy_(r) if inplace else r
    return _impl(input, p, training, inplace, d >= 2, False)


@overridable
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalising mean and variance."""
    return _impl(input, p, training, inplace, False, True)


@overridable
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels."""
    return _impl(input, p, training, inplace, True, True)
