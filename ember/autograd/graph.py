"""``torch.autograd.graph``: the autograd graph as programs see it -- its nodes, the
gradient edge a tensor's gradient flows into, and version bumps.

``Node`` is the class of every ``grad_fn`` (including leaves' ``AccumulateGrad``).  A
``GradientEdge`` names the (node, output number) pair where a tensor's gradient is
computed, so that code can refer to that spot of the graph without holding the tensor."""
import contextlib
from typing import NamedTuple

from .._core.node import HOOKS_ON, SAVED_HOOKS, Node, grad_accumulator
from .._core.tensor import Tensor, _version_of

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


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


class saved_tensors_hooks:
    """Context-manager that sets a pair of pack / unpack hooks for saved tensors.

    Inside it, ``pack_hook(tensor)`` is called every time an operation saves a tensor for
    backward (``save_for_backward`` of a custom Function included), and its result is
    stored instead of the tensor; ``unpack_hook(packed)`` is called when backward reads it
    and must return a tensor with the original's content.  The innermost pair applies;
    the hooks a tensor was saved under are the ones used to read it back."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if SAVED_HOOKS.disabled is not None:
            raise RuntimeError(SAVED_HOOKS.disabled)
        SAVED_HOOKS.stack.append((self.pack_hook, self.unpack_hook))
        HOOKS_ON[0] += 1
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.stack.pop()
        HOOKS_ON[0] -= 1


class save_on_cpu(saved_tensors_hooks):
    """Context manager under which tensors saved by the forward pass are stored on CPU,
    then copied back to their device for backward (``pin_memory``: pin the CPU copies)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            return tensor.device, tensor.cpu().pin_memory()

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Context-manager that disables the saved tensors default hooks feature: registering
    hooks inside it (or entering it while hooks are registered) raises ``RuntimeError``
    with ``error_message``."""
    if SAVED_HOOKS.stack:
        raise RuntimeError(error_message)
    prev = SAVED_HOOKS.disabled
    SAVED_HOOKS.disabled = error_message
    try:
        yield
    finally:
        SAVED_HOOKS.disabled = prev
