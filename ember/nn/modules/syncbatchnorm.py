"""SyncBatchNorm: batch normalization with statistics over the whole distributed batch.

In training with an initialized process group of more than one rank, the mean and
variance are computed over the inputs of every rank (one all-reduce of per-channel
sums), and backward all-reduces the two per-channel sums the input gradient needs, so
forward and backward equal BatchNorm on the concatenated batch.  Unlike torch, which
requires a GPU for the synchronized path, this runs on the CPU.  Without a process
group (or with one rank, or in eval) it is plain BatchNorm, as in torch.
"""
import numpy as np

from ..._core.tensor import wrap
from ...autograd.function import Function
from .. import functional as F
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _dist():
    # nn sits below distributed, which registers itself in nn.parallel._registry on import
    from ..parallel import _registry
    return _registry.loaded_dist()


def _channel_view(x):
    """(C, rest) view of an (N, C, *) array, and the reduction count per channel."""
    c = x.shape[1]
    return np.moveaxis(x, 1, 0).reshape(c, -1)


class _SyncBatchNormFn(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum,
                process_group, world_size):
        x = input._data
        xc = _channel_view(x).astype(np.float64)
        c = x.shape[1]
        packed = np.empty(2 * c + 1, dtype=np.float64)
        packed[:c] = xc.sum(axis=1)
        packed[c:2 * c] = (xc * xc).sum(axis=1)
        packed[2 * c] = xc.shape[1]
        stats = wrap(packed)
        _dist().all_reduce(stats, group=process_group)
        s = stats._data
        count = s[2 * c]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)} on this rank and {int(count)} values "
                             "per channel over all ranks")
        mean = s[:c] / count
        var = np.maximum(s[c:2 * c] / count - mean * mean, 0.0)
        invstd = 1.0 / np.sqrt(var + eps)
        if running_mean is not None:
            rm = running_mean._data
            rm[...] = (1 - momentum) * rm + momentum * mean
        if running_var is not None:
            rv = running_var._data
            rv[...] = (1 - momentum) * rv + momentum * var * count / (count - 1)
        shape = (1, c) + (1,) * (x.ndim - 2)
        xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
        out = xhat
        if weight is not None:
            out = out * weight._data.reshape(shape)
        if bias is not None:
            out = out + bias._data.reshape(shape)
        ctx.xhat = xhat
        ctx.invstd = invstd
        ctx.count = count
        ctx.weight = weight
        ctx.has_bias = bias is not None
        ctx.process_group = process_group
        return wrap(out.astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, grad_output):
        dy = grad_output._data
        xhat = ctx.xhat
        c = dy.shape[1]
        shape = (1, c) + (1,) * (dy.ndim - 2)
        dyc = _channel_view(dy).astype(np.float64)
        sum_dy = dyc.sum(axis=1)
        sum_dy_xhat = (dyc * _channel_view(xhat)).sum(axis=1)
        grad_weight = grad_bias = grad_input = None
        if ctx.weight is not None and ctx.needs_input_grad[1]:
            grad_weight = wrap(sum_dy_xhat.astype(ctx.weight.dtype.np))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = wrap(sum_dy.astype(ctx.weight.dtype.np
                                           if ctx.weight is not None else dy.dtype))
        if ctx.needs_input_grad[0]:
            # every rank's loss depends on every rank's input through the batch statistics
            packed = wrap(np.concatenate([sum_dy, sum_dy_xhat]))
            _dist().all_reduce(packed, group=ctx.process_group)
            g = packed._data
            mean_dy = (g[:c] / ctx.count).reshape(shape)
            mean_dy_xhat = (g[c:] / ctx.count).reshape(shape)
            scale = ctx.invstd.reshape(shape)
            if ctx.weight is not None:
                scale = scale * ctx.weight._data.reshape(shape)
            grad_input = wrap((scale * (dy - mean_dy - xhat * mean_dy_xhat)).astype(dy.dtype))
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    r"""Applies Batch Normalization over a N-Dimensional input, with the mean and
    variance computed over all processes of the process group.

    .. math::
        y = \frac{x - \mathrm{E}[x]}{\sqrt{\mathrm{Var}[x] + \epsilon}} * \gamma + \beta

    The statistics are per channel (dimension 1) over the batch of every rank of
    ``process_group`` (the world group if None).  In eval mode, with one rank or without
    an initialized process group, it behaves exactly like BatchNorm.

    Args:
        num_features: C from an expected input of size (N, C, +).
        eps: value added to the denominator for numerical stability.
        momentum: the value used for the running_mean and running_var computation; None
            for a cumulative moving average.
        affine: whether the module has learnable affine parameters.
        track_running_stats: whether to track running mean and variance.
        process_group: synchronization of statistics happens within this group.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                      else self.momentum)
        bn_training = True if self.training else (self.running_mean is None and
                                                  self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_stats else None
        running_var = self.running_var if use_stats else None
        need_sync = bn_training and self.training
        if need_sync:
            dist = _dist()
            is_initialized = getattr(dist, "is_initialized", None)
            need_sync = bool(is_initialized is not None and is_initialized())
        if need_sync:
            process_group = self.process_group or dist.group.WORLD
            world_size = dist.get_world_size(process_group)
            need_sync = world_size > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias,
                                bn_training, factor, self.eps)
        return _SyncBatchNormFn.apply(input, self.weight, self.bias, running_mean, running_var,
                                      self.eps, factor, process_group, world_size)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        r"""Converts all ``BatchNorm*D`` layers in ``module`` into SyncBatchNorm layers,
        sharing their parameters and buffers.

        Args:
            module: the module containing one or more BatchNorm layers.
            process_group: the process group to scope synchronization (default: world).

        Returns:
            The original ``module`` with converted layers; a BatchNorm ``module`` itself is
            returned as a new SyncBatchNorm.
        """
        out = module
        if isinstance(module, _BatchNorm):
            out = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                module.track_running_stats, process_group,
                                bias=module.bias is not None)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
