"""Gradient kernels of nn layers (issue 17): average pooling's input gradient and
``torch.nn.grad``'s convolution gradients, each one backward primitive."""
from .workloads import workload
from .workloads_nn import _data


@workload("avg_pool2d_backward", "nn")
def avg_pool2d_backward(lib):
    """Forward and input gradient of a 2x2 average pooling of 64x16x28x28 (LeNet-5's
    original subsampling, VGG-style heads)."""
    x = _data(lib, (64, 16, 28, 28)).requires_grad_()

    def step():
        y = lib.nn.functional.avg_pool2d(x, 2)
        x.grad = None
        y.backward(lib.ones_like(y))
    return step


@workload("conv2d_grads_nn_grad", "nn")
def conv2d_grads_nn_grad(lib):
    """``torch.nn.grad.conv2d_input`` and ``conv2d_weight`` of a 3x3 convolution
    (32x16x28x28 -> 32 channels)."""
    x, w = _data(lib, (32, 16, 28, 28)), _data(lib, (32, 16, 3, 3), seed=1)
    go = _data(lib, (32, 32, 28, 28), seed=2)

    def step():
        lib.nn.grad.conv2d_input(tuple(x.shape), w, go, padding=1)
        lib.nn.grad.conv2d_weight(x, tuple(w.shape), go, padding=1)
    return step
