"""``Variable``: the pre-0.4 wrapper that tensors have since absorbed.

``Variable(t, requires_grad=...)`` returns a new tensor sharing ``t``'s storage,
detached from its history, with ``requires_grad`` set (torch's behaviour); every
tensor is an instance of ``Variable``.
"""
from .._core.tensor import Tensor
from . import engine as _engine

__all__ = ["Variable"]


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class _ExecutionEngine:
    """``Variable._execution_engine``: the part of torch's engine object programs call."""

    @staticmethod
    def queue_callback(callback):
        """Run ``callback()`` when the running backward ends."""
        _engine.queue_callback(callback)


class Variable(metaclass=VariableMeta):
    """Wraps a tensor (legacy API): a detached alias with ``requires_grad`` set."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            return Tensor()
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        return t
