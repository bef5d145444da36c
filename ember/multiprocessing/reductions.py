"""Tensors through ``multiprocessing`` pipes and queues share memory (as in torch).

Registered with ``multiprocessing.reduction.ForkingPickler`` (used for Process arguments,
Queues and Pipes, not by ``ember.save``): a tensor is moved to shared memory if it is not
there yet (``share_memory_``) and travels as the name of its segment plus its layout, so the
receiver maps the same memory and in-place updates are seen on both sides.
"""
from multiprocessing.reduction import ForkingPickler

from .._core import shared_storage
from .._core.tensor import Tensor, wrap

__all__ = ["init_reductions", "rebuild_tensor", "reduce_tensor"]


def rebuild_tensor(cls, handle, requires_grad):
    t = wrap(shared_storage.attach(*handle))
    if cls is not Tensor:
        from ..nn.parameter import Parameter
        if issubclass(cls, Parameter):
            return cls(t, requires_grad)
        t.__class__ = cls
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t):
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  If "
                           "you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    t.share_memory_()
    return (rebuild_tensor, (type(t), shared_storage.handle(t._data), t.requires_grad))


_done = []


def init_reductions():
    """Registers the tensor reducers with ForkingPickler (idempotent)."""
    if _done:
        return
    from ..nn.parameter import Buffer, Parameter
    for cls in (Tensor, Parameter, Buffer):
        if isinstance(cls, type):
            ForkingPickler.register(cls, reduce_tensor)
    _done.append(True)
