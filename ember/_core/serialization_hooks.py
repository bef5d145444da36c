"""Pickling of tensors: data, dtype and requires_grad (autograd history is not kept)."""
import numpy as np

from .tensor import Tensor, wrap


def _rebuild(arr, requires_grad, cls=Tensor):
    t = wrap(np.array(arr, copy=True))
    if cls is not Tensor:
        t.__class__ = cls
    t._requires_grad = requires_grad
    return t


def reduce_tensor(t):
    if t.grad_fn is not None:
        pass  # pickling a non-leaf keeps its value, as torch.save does
    return (_rebuild, (t._data, t._requires_grad, type(t)))
