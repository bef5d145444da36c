"""Tensor layouts and memory formats (``torch.layout``, ``torch.memory_format``).

Singletons compared by identity, printed with the framework prefix
(``torch.strided`` under ``ember.compat``), as libraries such as ``safetensors.torch``
and ``Tensor.to(memory_format=...)`` callers expect to find them.
"""
from . import dtype as _dt

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
           "sparse_bsr", "sparse_bsc", "jagged", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d", "legacy_contiguous_format"]


class _Named:
    __slots__ = ("name",)
    _registry = None

    def __init__(self, name):
        self.name = name
        type(self)._registry[name] = self

    def __repr__(self):
        return _dt.REPR_PREFIX[0] + self.name

    def __reduce__(self):
        return (_lookup, (type(self).__name__, self.name))


class layout(_Named):
    """The memory layout of a tensor: ``strided`` (dense) or one of the sparse layouts."""
    __slots__ = ()
    _registry = {}


class memory_format(_Named):
    """The order in which a dense tensor's elements are laid out in memory."""
    __slots__ = ()
    _registry = {}


def _lookup(kind, name):
    return {"layout": layout, "memory_format": memory_format}[kind]._registry[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
legacy_contiguous_format = contiguous_format
