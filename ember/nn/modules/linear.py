"""Linear layers: Identity, Linear, Bilinear and LazyLinear (``torch.nn.modules.linear``)."""
import math

from ... import ops as _ops
from ...autograd import no_grad
from .. import functional as F
from ..parameter import Parameter
from .lazy import LazyModuleMixin, uninitialized
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


def _uniform_(t, bound):
    # torch's kaiming_uniform_(a=sqrt(5)) on a (out, in) weight is U(-1/sqrt(in), 1/sqrt(in))
    with no_grad():
        t.uniform_(-bound, bound)


class Identity(Module):
    """A placeholder identity operator that is argument-insensitive."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """Applies an affine linear transformation to the incoming data: y = x A^T + b."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_ops.empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(_ops.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        fan_in = self.weight.shape[1] if self.weight.dim() > 1 else 0
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """Applies a bilinear transformation to the incoming data: y = x1^T A x2 + b."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_ops.empty((out_features, in1_features, in2_features),
                                           dtype=dtype))
        if bias:
            self.bias = Parameter(_ops.empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is inferred from the first input it sees."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        # bias=False here: the bias is replaced by an uninitialized one below
        super().__init__(0, 0, False, device, dtype)
        self.out_features = out_features
        self.weight = uninitialized(dtype)
        if bias:
            self.bias = uninitialized(dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Infer ``in_features`` from ``input`` and create the weight (and bias)."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        elif self.in_features == 0:  # materialized by load_state_dict
            self.in_features = self.weight.shape[-1]


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear layer that dynamic quantization leaves alone (torch uses it for the output
    projection of MultiheadAttention); otherwise exactly `Linear`."""
