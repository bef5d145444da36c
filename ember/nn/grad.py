"""``torch.nn.grad``: gradients of convolutions with respect to their input or weight,
computed by differentiating the convolution itself (linear in each of the two, so the value
the other one is given does not matter), with a graph so they are differentiable too."""
from .. import autograd
from ..autograd.grad_mode import enable_grad
from ..ops.creation import zeros
from .functional import conv1d, conv2d, conv3d

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    with enable_grad():
        x = zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device,
                  requires_grad=True)
        out = conv(x, weight, None, stride, padding, dilation, groups)
        return autograd.grad(out, x, grad_output, create_graph=True)[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    with enable_grad():
        w = zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device,
                  requires_grad=True)
        out = conv(input, w, None, stride, padding, dilation, groups)
        return autograd.grad(out, w, grad_output, create_graph=True)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv1d with respect to the input of the convolution."""
    return _input_grad(conv1d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv1d with respect to the weight of the convolution."""
    return _weight_grad(conv1d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv2d with respect to the input of the convolution."""
    return _input_grad(conv2d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv2d with respect to the weight of the convolution."""
    return _weight_grad(conv2d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv3d with respect to the input of the convolution."""
    return _input_grad(conv3d, input_size, weight, grad_output, stride, padding, dilation,
                       groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv3d with respect to the weight of the convolution."""
    return _weight_grad(conv3d, input, weight_size, grad_output, stride, padding, dilation,
                        groups)
