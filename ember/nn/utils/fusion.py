"""Folding an eval-mode BatchNorm into the convolution or linear layer before it
(``torch.nn.utils.fusion``): y = bn(conv(x)) becomes one conv with scaled weights and a
shifted bias, so inference runs one op instead of two."""
import copy

from ...ops.creation import ones_like, zeros_like
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _bn_affine(bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """BatchNorm's per-channel scale and shift with missing affine terms filled in."""
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    return bn_w * (bn_rv + bn_eps).rsqrt(), bn_b


def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """Fuse convolution parameters and BatchNorm statistics into new convolution
    Parameters ``(weight, bias)``; ``transpose`` for ConvTranspose weights (out channels
    on dim 1)."""
    w_dtype = conv_w.dtype
    b_dtype = w_dtype if conv_b is None else conv_b.dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    scale, shift = _bn_affine(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    rest = [1] * (conv_w.dim() - 2)
    shape = [1, -1] + rest if transpose else [-1, 1] + rest
    w = (conv_w * scale.reshape(shape)).to(dtype=w_dtype)
    b = ((conv_b - bn_rm) * scale + shift).to(dtype=b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` (eval mode) with ``bn`` (eval mode) folded into its parameters."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """Fuse Linear parameters and BatchNorm statistics into new Linear Parameters."""
    w_dtype = linear_w.dtype
    b_dtype = w_dtype if linear_b is None else linear_b.dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale, shift = _bn_affine(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    w = (linear_w * scale.unsqueeze(-1)).to(dtype=w_dtype)
    b = ((linear_b - bn_rm) * scale + shift).to(dtype=b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) with ``bn`` (eval mode) folded into its parameters.

    BatchNorm's features must equal the Linear's ``out_features`` (or be 1, broadcast)."""
    _check_eval(linear, bn)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             "bn.num_features == 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
