"""ATen-only signatures on ember's functions: the operators of ``ember.ops.aten`` whose
argument lists differ from the public function's (``convolution``'s nine arguments,
``native_batch_norm``'s saved statistics, ``embedding``'s weight-first order...)."""
from .. import ops as _ops
from ..autograd.grad_mode import no_grad as _no_grad
from ..nn import functional as _F
from ..ops.nn import batch_norm as _BN
from ..ops.nn.conv_ops import convolution

__all__ = ["view", "expand", "slice_", "alias", "to_copy", "sym_size", "sym_numel",
           "sym_stride", "softmax", "log_softmax", "convolution", "native_batch_norm",
           "native_batch_norm_functional", "native_batch_norm_no_stats",
           "native_batch_norm_no_training",
           "native_layer_norm", "layer_norm", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
           "embedding", "factory", "full", "scalar_tensor"]


def view(self, size):
    return self.view(size)


def expand(self, size, *, implicit=False):
    return self.expand(*size)


def slice_(self, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * self.dim()
    index[dim] = slice(start, end, step)
    return self[tuple(index)]


def alias(self):
    return self.view(self.shape)


def to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None,
            non_blocking=False, memory_format=None):
    out = self.to(device=device if device is not None else self.device,
                  dtype=dtype if dtype is not None else self.dtype, copy=True)
    return out


def sym_size(self, dim):
    return self.shape[dim]


def sym_numel(self):
    return self.numel()


def sym_stride(self, dim):
    return self.stride(dim)


def softmax(self, dim, half_to_float):
    return _ops.softmax(self, dim)


def log_softmax(self, dim, half_to_float):
    return _ops.log_softmax(self, dim)


def _empty(like):
    return _ops.zeros(0, dtype=like.dtype)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(out, save_mean, save_invstd)``; updates the running statistics in place when
    training (the statistics are empty tensors in evaluation, as torch returns them)."""
    if not training:
        return native_batch_norm_no_training(input, weight, bias, running_mean, running_var,
                                             momentum, eps)
    if running_mean is None or running_var is None:
        return native_batch_norm_no_stats(input, weight, bias, training, momentum, eps)
    out, mean, invstd, new_mean, new_var = native_batch_norm_functional(
        input, weight, bias, running_mean, running_var, training, momentum, eps)
    with _no_grad():
        running_mean.copy_(new_mean)
        running_var.copy_(new_var)
    return out, mean, invstd


def native_batch_norm_functional(input, weight, bias, running_mean, running_var, training,
                                 momentum, eps):
    """``native_batch_norm`` without writes: the new running statistics are returned."""
    return _BN.BATCH_NORM_FUNCTIONAL(input, weight, bias, running_mean, running_var,
                                     training=bool(training), momentum=float(momentum),
                                     eps=float(eps))


def native_batch_norm_no_stats(input, weight, bias, training, momentum, eps):
    return _BN.BATCH_NORM_NO_STATS(input, weight, bias, training=bool(training),
                                   momentum=float(momentum), eps=float(eps))


def native_batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum,
                                  eps):
    return _BN.BATCH_NORM_NO_TRAINING(input, weight, bias, running_mean, running_var,
                                      momentum=float(momentum), eps=float(eps))


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(out, mean, rstd)``; the statistics keep size-1 normalized dims, as torch's do."""
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    rstd = (input.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    out = _F.layer_norm(input, list(normalized_shape), weight, bias, eps)
    return out, mean, rstd


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return _F.layer_norm(input, list(normalized_shape), weight, bias, eps)


def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F.max_pool2d(self, kernel_size, stride or None, padding, dilation,
                         ceil_mode=ceil_mode)


def avg_pool2d(self, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _F.avg_pool2d(self, kernel_size, stride or None, padding, ceil_mode,
                         count_include_pad, divisor_override)


def adaptive_avg_pool2d(self, output_size):
    return _F.adaptive_avg_pool2d(self, list(output_size))


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def factory(name):
    """``aten::zeros(size, *, dtype, layout, device, pin_memory)`` and its kin."""
    fn = getattr(_ops, name)

    def make(size, *, dtype=None, layout=None, device=None, pin_memory=None,
             memory_format=None):
        return fn(*size, dtype=dtype, device=device)
    make.__name__ = name
    return make


def full(size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _ops.full(size, fill_value, dtype=dtype, device=device)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    return _ops.scalar_tensor(s, dtype=dtype, device=device)
