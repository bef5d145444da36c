"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d, LayerNorm, GroupNorm,
RMSNorm, LocalResponseNorm, CrossMapLRN2d and the Lazy batch/instance norms."""
import warnings

import numpy as np

from ..._core.tensor import host_tensor
from ...ops.creation import empty, ones, tensor, zeros
from ..._core.dtype import int64
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedBuffer
from .lazy import LazyModuleMixin, uninitialized
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm",
           "CrossMapLRN2d"]


def _register_affine(module, enabled, shape, bias, dtype):
    """weight (ones) and bias (zeros) Parameters of ``shape``, or None entries as torch does."""
    module.register_parameter("weight", Parameter(empty(shape, dtype=dtype)) if enabled else None)
    module.register_parameter("bias", Parameter(empty(shape, dtype=dtype))
                              if enabled and bias else None)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    # 2: num_batches_tracked exists (written into state-dict metadata, as torch's)
    _version = 2

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, affine, num_features, bias, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        key = prefix + "num_batches_tracked"
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict and self.num_batches_tracked is not None:
            # checkpoints from before num_batches_tracked existed
            state_dict[key] = tensor(0, dtype=int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    _dims = ()

    def _check_input_dim(self, input):
        if input.dim() not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                      else self.momentum)
        bn_training = True if self.training else (self.running_mean is None and
                                                  self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Applies Batch Normalization over a 2D or 3D input."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Applies Batch Normalization over a 4D input."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Applies Batch Normalization over a 5D input."""
    _dims = (5,)


class _InstanceNorm(_NormBase):
    _no_batch = 2

    def __init__(self, num_features, eps=1e-05, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)

    def _check_input_dim(self, input):
        nb = self._no_batch
        if input.dim() not in (nb, nb + 1):
            raise ValueError(f"expected {nb}D or {nb + 1}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        fd = input.dim() - self._no_batch
        if input.shape[fd] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={fd} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[fd]}.")
            warnings.warn(f"input's size at dim={fd} does not match num_features. You can "
                          f"silence this warning by not passing in num_features, which is not "
                          f"used because affine=False", stacklevel=2)
        unbatched = input.dim() == self._no_batch
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                              self.bias, self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Applies Instance Normalization over a 2D (unbatched) or 3D (batched) input."""
    _no_batch = 2


class InstanceNorm2d(_InstanceNorm):
    """Applies Instance Normalization over a 3D (unbatched) or 4D (batched) input."""
    _no_batch = 3


class InstanceNorm3d(_InstanceNorm):
    """Applies Instance Normalization over a 4D (unbatched) or 5D (batched) input."""
    _no_batch = 4


def _shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Applies Layer Normalization over a mini-batch of inputs."""

    def __init__(self, normalized_shape, eps=1e-05, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, elementwise_affine, self.normalized_shape, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Applies Group Normalization over a mini-batch of inputs."""

    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, device=None, dtype=None,
                 *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, affine, num_channels, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """Applies Root Mean Square Layer Normalization over a mini-batch of inputs."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Applies local response normalization over an input signal, across channels."""

    def __init__(self, size, alpha=0.0001, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class _LazyNormBase(LazyModuleMixin):
    """Batch/instance norm whose ``num_features`` is inferred from the first input's dim 1.

    The norm base is built with no features, no affine
    parameters and no running statistics, which are then replaced by uninitialized ones."""

    def __init__(self, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = uninitialized(dtype)
            if bias:
                self.bias = uninitialized(dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=int64)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Infer ``num_features`` from ``input.shape[1]`` and create weights and statistics."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()


def _cross_map_window(channels, size):
    """0/1 matrix W: the squares of channels W[c] sum into channel c's scale.

    This is torch's running-sum recurrence (the legacy Lua LRN) written as a matrix: the
    window of channel c reaches ``(size - 1) // 2 + 1`` channels up, and channel 0 never
    leaves the first ``pre + 1`` windows -- the quirk that makes its output differ from
    ``local_response_norm``, kept so results equal torch's."""
    pre = int((size - 1) / 2 + 1)
    w = np.zeros((channels, channels), dtype=np.float64)
    row = np.zeros(channels, dtype=np.float64)
    row[:min(pre, channels)] = 1
    w[0] = row
    for c in range(1, channels):
        if c < channels - pre + 1:
            row[c + pre - 1] += 1
        if c > pre:
            row[c - pre] -= 1
        w[c] = row
    return w


class CrossMapLRN2d(Module):
    """Local response normalization across the channels of a 4D input, with torch's
    legacy window (see ``_cross_map_window``).

    The gradient is the exact derivative of the forward (autograd over ember ops); torch's
    hand-written backward for this module is not, and fails for some sizes."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        w = host_tensor(_cross_map_window(input.shape[1], self.size).astype(input.dtype.np),
                        input)
        sums = (input * input).movedim(1, -1).matmul(w.t()).movedim(-1, 1)
        return input * (sums * (self.alpha / self.size) + self.k).pow(-self.beta)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
