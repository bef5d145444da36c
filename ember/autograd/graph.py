"""``torch.autograd.graph``: the autograd graph as programs see it -- its nodes, the
gradient edge a tensor's gradient flows into, and version bumps.

``Node`` is the class of every ``grad_fn`` (including leaves' ``AccumulateGrad``).  A
``GradientEdge`` names the (node, output number) pair where a tensor's gradient is
computed, so that code can refer to that spot of the graph without holding the tensor."""
import contextlib
from typing import NamedTuple

from .._core.device import accelerator_name
from .._core.node import HOOKS_ON, SAVED_HOOKS, Node, grad_accumulator
from .._core.tensor import Tensor, _version_of

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "allow_mutation_on_saved_tensors", "register_multi_grad_hook"]


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
            if not pin_memory or accelerator_name() is None:  # torch pins with one only
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


def _memory_key(t):
    """One key per block of memory: a view and its base share it."""
    a = t._data
    while getattr(a, "base", None) is not None and hasattr(a.base, "shape"):
        a = a.base
    return id(a)


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block: the tensors saved for
    backward (``original``), the copies taken before a write changed them (``cloned``), and
    which saved tensors live in each block of memory (``sid_to_tid``)."""

    def __init__(self):
        self.original = {}
        self.cloned = {}
        self.sid_to_tid = {}
        self.tid_to_weakhandle = {}
        self._next = 0
        self._closed = False

    def clear(self):
        self.original.clear()
        self.cloned.clear()
        self.sid_to_tid.clear()
        self.tid_to_weakhandle.clear()


_MUTATION_CTX = [None]


def _mutation_mode(ctx):
    from .._core.dispatch import DispatchMode

    class _CloneSavedBeforeWrite(DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            if hasattr(op, "base") and args and isinstance(args[0], Tensor):  # op_ writes
                for tid in ctx.sid_to_tid.get(_memory_key(args[0]), ()):  # into args[0]
                    if tid not in ctx.cloned:
                        ctx.cloned[tid] = ctx.original[tid].clone()
            return op(*args, **kwargs)
    return _CloneSavedBeforeWrite()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Context manager under which tensors saved for backward may be modified in place: the
    first in-place write to a saved tensor (or a view of its memory) copies it first, and
    backward reads the copy, so gradients are those of the values the forward used.  Backward
    of a graph recorded inside must run inside the same block."""
    if _MUTATION_CTX[0] is not None:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()

    def pack(t):
        if ctx._closed:
            return t
        tid = ctx._next
        ctx._next += 1
        ctx.original[tid] = t
        ctx.sid_to_tid.setdefault(_memory_key(t), set()).add(tid)
        return tid, ctx

    def unpack(packed):
        if not isinstance(packed, tuple):
            return packed
        tid, owner = packed
        if owner._closed:
            raise AssertionError("Trying to backward outside of the "
                                 "'allow_mutation_on_saved_tensors' contextin which the graph "
                                 "was originally recorded.")
        return owner.cloned.get(tid, owner.original.get(tid))

    _MUTATION_CTX[0] = ctx
    try:
        with saved_tensors_hooks(pack, unpack), _mutation_mode(ctx):
            yield ctx
    finally:
        _MUTATION_CTX[0] = None
        ctx._closed = True
        ctx.clear()


class _MultiHandle:
    """The handle ``register_multi_grad_hook`` returns: ``remove()`` drops every hook."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Register a multi-grad backward hook.

    ``mode="all"``: ``fn(grads)`` runs once per backward that computes the gradient of any of
    ``tensors``, with each tensor's gradient (None for those the backward did not reach);
    ember calls it when that backward ends.  ``mode="any"``: ``fn(grad)`` runs once per
    backward, with the first of those gradients computed.  Returns a handle whose
    ``remove()`` removes the hook."""
    from .engine import _TASK, queue_callback
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    state = {"task": None, "grads": None}

    def make_hook(i):
        def hook(grad):
            task = _TASK.callbacks
            if state["task"] is task:  # this backward already saw one of the tensors
                if mode == "all":
                    state["grads"][i] = grad
                return None
            state["task"] = task
            if mode == "any":
                fn(grad)
                return None
            grads = state["grads"] = [None] * len(tensors)
            grads[i] = grad

            def at_end():
                state["task"] = None
                fn(grads)
            queue_callback(at_end)
            return None
        return hook

    return _MultiHandle([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)
                         if t.requires_grad])
