"""Activation Modules (``torch.nn`` activations): thin wrappers over ``nn.functional``."""
from ... import ops as _ops
from ...autograd import no_grad
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Threshold", "ReLU", "RReLU", "Hardtanh", "ReLU6", "Sigmoid", "Hardsigmoid", "Tanh",
           "SiLU", "Mish", "Hardswish", "ELU", "CELU", "SELU", "GLU", "GELU", "Hardshrink",
           "LeakyReLU", "LogSigmoid", "Softplus", "Softshrink", "PReLU", "Softsign", "Tanhshrink",
           "Softmin", "Softmax", "Softmax2d", "LogSoftmax"]


def _inplace_str(inplace, lead=", "):
    return (lead + "inplace=True") if inplace else ""


class _Stateless(Module):
    """An activation with no options: ``forward`` applies ``_fn``."""
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class _Inplace(Module):
    """An activation with only an ``inplace`` option."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, "")


class Threshold(Module):
    """Thresholds each element of the input Tensor."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class ReLU(_Inplace):
    """Applies the rectified linear unit function element-wise."""
    _fn = staticmethod(F.relu)


class RReLU(Module):
    """Applies the randomized leaky rectified linear unit function element-wise."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Hardtanh(Module):
    """Applies the HardTanh function element-wise."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        super().__init__()
        if min_value is not None or max_value is not None:
            import warnings
            warnings.warn("keyword argument `min_value`/`max_value` is deprecated and renamed to "
                          "`min_val`/`max_val`", FutureWarning, stacklevel=2)
            min_val = min_value if min_value is not None else min_val
            max_val = max_value if max_value is not None else max_val
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if self.max_val <= self.min_val:
            raise AssertionError

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """Applies ReLU6(x) = min(max(0, x), 6) element-wise."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace, "")


class Sigmoid(_Stateless):
    """Applies the Sigmoid function element-wise."""
    _fn = staticmethod(_ops.sigmoid)


class Tanh(_Stateless):
    """Applies the Hyperbolic Tangent function element-wise."""
    _fn = staticmethod(_ops.tanh)


class LogSigmoid(_Stateless):
    """Applies LogSigmoid element-wise."""
    _fn = staticmethod(F.logsigmoid)


class Softsign(_Stateless):
    """Applies SoftSign(x) = x / (1 + |x|) element-wise."""
    _fn = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    """Applies Tanhshrink(x) = x - tanh(x) element-wise."""
    _fn = staticmethod(F.tanhshrink)


class Hardsigmoid(_Inplace):
    """Applies the Hardsigmoid function element-wise."""
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):
        return ""


class Hardswish(_Inplace):
    """Applies the Hardswish function element-wise."""
    _fn = staticmethod(F.hardswish)

    def extra_repr(self):
        return ""


class SiLU(_Inplace):
    """Applies the Sigmoid Linear Unit (SiLU) function element-wise."""
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """Applies the Mish function element-wise."""
    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    """Applies the SELU function element-wise."""
    _fn = staticmethod(F.selu)


class ELU(Module):
    """Applies the Exponential Linear Unit (ELU) function element-wise."""
    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """Applies the CELU function element-wise."""
    _fn = staticmethod(F.celu)


class LeakyReLU(Module):
    """Applies LeakyReLU element-wise."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class GELU(Module):
    """Applies the Gaussian Error Linear Units function."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """Applies the Softplus function element-wise."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """Applies the Hard Shrinkage function element-wise."""
    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """Applies the soft shrinkage function element-wise."""
    _fn = staticmethod(F.softshrink)


class PReLU(Module):
    """Applies PReLU(x) = max(0, x) + a * min(0, x) with a learnable ``a`` per channel."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(_ops.empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """Applies the gated linear unit function along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _SoftmaxBase(Module):
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(_SoftmaxBase):
    """Applies the Softmin function along ``dim``."""
    _fn = staticmethod(F.softmin)


class Softmax(_SoftmaxBase):
    """Applies the Softmax function along ``dim``."""
    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxBase):
    """Applies log(Softmax(x)) along ``dim``."""
    _fn = staticmethod(F.log_softmax)


class Softmax2d(Module):
    """Applies Softmax over features to each spatial location (dim -3)."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             f"instead")
        return F.softmax(input, -3, _stacklevel=5)


from .transformer import MultiheadAttention  # noqa: E402,F401  (torch.nn.modules.activation path)
