"""``torch.nn.grad``: gradients of convolutions with respect to their input or weight.

Each is one ``convolution_backward`` with an output mask asking for that gradient alone,
so no convolution is run forward.  The operand whose gradient is asked for is only a shape
to the kernel: a broadcast scalar stands for it.  The op's derivative makes the result
differentiable with respect to the other operand and ``grad_output``."""
from ..ops.nn.conv_checks import check_conv, ntuple
from ..ops.nn.conv_ops import convolution_backward

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _conv_backward(n, grad_output, input, weight, stride, padding, dilation, groups, which):
    if isinstance(padding, str):  # torch's schema takes ints here, not 'same'/'valid'
        raise RuntimeError(f"conv{n}d gradient: padding must be an int or a tuple of ints, "
                           f"but got {padding!r}")
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-"
                           f"dimensional weight {list(weight.shape)}, but got {input.dim()}-"
                           f"dimensional input of size {list(input.shape)} instead")
    stride, padding, dilation = (ntuple(v, n, name) for v, name in (
        (stride, "stride"), (padding, "padding"), (dilation, "dilation")))
    out = check_conv(tuple(input.shape), tuple(weight.shape), None, stride,
                     tuple((p, p) for p in padding), dilation, groups, False, (0,) * n)
    if tuple(out) != tuple(grad_output.shape):
        raise RuntimeError(f"conv{n}d gradient: grad_output has shape "
                           f"{list(grad_output.shape)}, but the convolution of an input of "
                           f"size {list(input.shape)} with a weight of size "
                           f"{list(weight.shape)} gives {list(out)}")
    mask = tuple(i == which for i in range(3))
    return convolution_backward(grad_output, input, weight, None, stride, padding, dilation,
                                False, (0,) * n, groups, mask)[which]


def _shape_only(like, size):
    return like.new_zeros(()).expand(tuple(size))


def _input_grad(n, input_size, weight, grad_output, stride, padding, dilation, groups):
    return _conv_backward(n, grad_output, _shape_only(grad_output, input_size), weight, stride,
                          padding, dilation, groups, 0)


def _weight_grad(n, input, weight_size, grad_output, stride, padding, dilation, groups):
    return _conv_backward(n, grad_output, input, _shape_only(grad_output, weight_size), stride,
                          padding, dilation, groups, 1)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv1d with respect to the input of the convolution."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv1d with respect to the weight of the convolution."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv2d with respect to the input of the convolution."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv2d with respect to the weight of the convolution."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv3d with respect to the input of the convolution."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """Compute the gradient of conv3d with respect to the weight of the convolution."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
