"""Convolution layers: Conv1d/2d/3d, ConvTranspose1d/2d/3d, LazyConv1d/2d/3d."""
import math

from ...autograd import no_grad
from ...ops.creation import empty
from .. import functional as F
from .. import init
from ..functional.conv import ntuple
from ..parameter import Parameter
from .lazy import LazyModuleMixin, uninitialized
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d"]

_MODES = {"zeros", "reflect", "replicate", "circular"}


def _tup(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v) if len(v) != 1 or n == 1 else tuple(v) * n
    return (v,) * n


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _tup(kernel_size, n), _tup(stride, n), _tup(dilation, n)
        if isinstance(padding, str):
            if padding not in {"valid", "same"}:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _tup(padding, n)
        if padding_mode not in _MODES:
            raise ValueError(f"padding_mode must be one of {_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = _tup(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            rev = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    rev[2 * i] = total // 2
                    rev[2 * i + 1] = total - total // 2
        else:
            rev = [p for p in reversed(padding) for _ in range(2)]
        self._reversed_padding_repeated_twice = rev
        if transposed:
            shape = (in_channels, out_channels // groups) + kernel_size
        else:
            shape = (out_channels, in_channels // groups) + kernel_size
        self._make_params(shape, out_channels, bias, dtype)
        self.reset_parameters()

    def _make_params(self, shape, out_channels, bias, dtype):
        self.weight = Parameter(empty(shape, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = len(self.kernel_size)
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * (n if not isinstance(self.padding, str) else
                                   len(self.padding)):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = _CONV[self._n]
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                      weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """Applies a 1D convolution over an input signal composed of several input planes."""
    _n = 1


class Conv2d(_Conv):
    """Applies a 2D convolution over an input signal composed of several input planes."""
    _n = 2


class Conv3d(_Conv):
    """Applies a 3D convolution over an input signal composed of several input planes."""
    _n = 3


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims,
                        dilation=None):
        if output_size is None:
            return ntuple(self.output_padding, num_spatial_dims)
        has_batch = input.dim() == num_spatial_dims + 2
        output_size = list(output_size)
        if len(output_size) == num_spatial_dims + (2 if has_batch else 1):
            output_size = output_size[-num_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{num_spatial_dims + (2 if has_batch else 1)} elements (got "
                             f"{len(output_size)})")
        dilation = dilation or (1,) * num_spatial_dims
        res = []
        for d in range(num_spatial_dims):
            dim_size = input.shape[d + input.dim() - num_spatial_dims]
            lo = ((dim_size - 1) * stride[d] - 2 * padding[d] +
                  dilation[d] * (kernel_size[d] - 1) + 1)
            hi = lo + stride[d] - 1
            if not lo <= output_size[d] <= hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {[lo]} to {[hi]} (for an input of "
                                 f"{list(input.shape[2:])})")
            res.append(output_size[d] - lo)
        return tuple(res)

    def forward(self, input, output_size=None):
        n = self._n
        op = self._output_padding(input, output_size, self.stride, self.padding,
                                  self.kernel_size, n, self.dilation)
        return _CONVT[n](input, self.weight, self.bias, self.stride, self.padding, op,
                         self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Applies a 1D transposed convolution operator over an input image."""
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Applies a 2D transposed convolution operator over an input image."""
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Applies a 3D transposed convolution operator over an input image."""
    _n = 3


class _LazyConv(LazyModuleMixin):
    """Conv whose ``in_channels`` is inferred from the first input it sees."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        self._lazy_dtype = dtype
        super().__init__(0, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)

    def _make_params(self, shape, out_channels, bias, dtype):
        self.weight = uninitialized(dtype)
        if bias:
            self.bias = uninitialized(dtype)
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Infer ``in_channels`` from ``input`` and create the weight (and bias)."""
        if self.has_uninitialized_params():
            with no_grad():
                batched = input.dim() == self._n + 2
                self.in_channels = input.shape[1 if batched else 0]
                if self.in_channels % self.groups != 0:
                    raise ValueError("in_channels must be divisible by groups")
                self.weight.materialize((self.out_channels, self.in_channels // self.groups) +
                                        self.kernel_size)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()
        elif self.in_channels == 0:  # materialized by load_state_dict
            self.in_channels = self.weight.shape[1] * self.groups


class LazyConv1d(_LazyConv, Conv1d):
    """A Conv1d whose in_channels is inferred from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A Conv2d whose in_channels is inferred from the first input."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A Conv3d whose in_channels is inferred from the first input."""
    cls_to_become = Conv3d


class _LazyConvTranspose(LazyModuleMixin):
    """ConvTranspose whose ``in_channels`` is inferred from the first input it sees."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        self._lazy_dtype = dtype
        super().__init__(0, out_channels, kernel_size, stride, padding, output_padding, groups,
                         bias, dilation, padding_mode, device, dtype)

    _make_params = _LazyConv._make_params

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Infer ``in_channels`` from ``input`` and create the weight (and bias)."""
        if self.has_uninitialized_params():
            with no_grad():
                batched = input.dim() == self._n + 2
                self.in_channels = input.shape[1 if batched else 0]
                if self.in_channels % self.groups != 0:
                    raise ValueError("in_channels must be divisible by groups")
                self.weight.materialize((self.in_channels, self.out_channels // self.groups) +
                                        self.kernel_size)
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()
        elif self.in_channels == 0:  # materialized by load_state_dict
            self.in_channels = self.weight.shape[0]


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ConvTranspose1d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ConvTranspose2d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ConvTranspose3d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose3d


__all__ += ["LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]
