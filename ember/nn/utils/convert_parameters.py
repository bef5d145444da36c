"""Flatten parameters into one vector and back."""
from ..._core.tensor import Tensor
from ...ops import cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """Flatten an iterable of parameters into a single vector."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy slices of a vector into an iterable of parameters."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    ptr = 0
    for p in parameters:
        n = p.numel()
        p.data = vec[ptr:ptr + n].view_as(p).data
        ptr += n
