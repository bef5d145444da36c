"""``torch.autograd.graph``: the autograd graph as programs see it -- its nodes, the
gradient edge a tensor's gradient flows into, and version bumps.

``Node`` is the class of every ``grad_fn`` (including leaves' ``AccumulateGrad``).  A
``GradientEdge`` names the (node, output number) pair where a tensor's gradient is
computed, so that code can refer to that spot of the graph without holding the tensor."""
from typing import NamedTuple

from .._core.node import Node, grad_accumulator
from .._core.tensor import Tensor, _version_of

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version"]


class GradientEdge(NamedTuple):
    """Object representing a given gradient edge within the autograd graph: ``node`` and
    the ``output_nr`` of its output the gradient belongs to."""
    node: Node
    output_nr: int
    ownership_token: object = None


def get_gradient_edge(tensor):
    """The ``GradientEdge`` where ``tensor``'s gradient will be computed: its ``grad_fn``
    and output number, or, for a leaf that requires grad, its gradient accumulator."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor "
                           "that does not require gradients")
    if tensor.grad_fn is None:
        return GradientEdge(grad_accumulator(tensor), 0)
    return GradientEdge(tensor.grad_fn, tensor.output_nr)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place write would, so autograd notices data changed behind its back."""
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in tensors:
        _version_of(t)[0] += 1
