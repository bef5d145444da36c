"""Linear layers: ``linear`` (the fused primitive of ``ember.ops.nn.linear``) and
``bilinear`` (an einsum composite)."""
from ..._core.dispatch import overridable
from ...ops._helpers import apply
from ...ops.blas import einsum
from ...ops.nn.linear import LINEAR

__all__ = ["linear", "bilinear"]


@overridable
def linear(input, weight, bias=None):
    """Applies a linear transformation to the incoming data: y = x A^T + b."""
    if bias is None:
        return apply(LINEAR, (input, weight), {})
    return apply(LINEAR, (input, weight, bias), {})


@overridable
def bilinear(input1, input2, weight, bias=None):
    """Applies a bilinear transformation to the incoming data: y = x1^T A x2 + b."""
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, but got "
                           f"{weight.dim()}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    y = einsum("...i,oij,...j->...o", input1, weight, input2)
    return y if bias is None else y + bias
