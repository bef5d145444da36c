"""Tensor layouts and memory formats (``torch.layout``, ``torch.memory_format``).

Singletons compared by identity, printed with the framework prefix
(``torch.strided`` under ``ember.compat``), as libraries such as ``safetensors.torch``
and ``Tensor.to(memory_format=...)`` callers expect to find them.
"""
from . import dtype as _dt

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
           "sparse_bsr", "sparse_bsc", "jagged", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d", "legacy_contiguous_format"]
# (the helpers below are imported by name: ember's namespace star-imports this list)


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


def suggest_memory_format(shape, strides):
    """torch's ``Tensor.suggest_memory_format()`` from a dense tensor's sizes and strides:
    ``channels_last`` (4-d) or ``channels_last_3d`` (5-d) when the channel dimension is
    innermost and the batch outermost, else ``contiguous_format``.  Ambiguous strides (a
    zero channel stride, an empty dim, ``N111`` tensors whose strides fit both) read as
    contiguous, as in torch."""
    if len(shape) not in (4, 5) or strides[1] == 0:
        return contiguous_format
    least = 0
    for d in (1,) + tuple(range(len(shape) - 1, 1, -1)) + (0,):   # channels, W, H, (D), N
        if shape[d] == 0 or strides[d] < least or (d == 0 and least == strides[1]):
            return contiguous_format
        least = strides[d] * shape[d]
    return channels_last if len(shape) == 4 else channels_last_3d


# the dims of a channels-last tensor from the innermost out: channels, then W, H, (D), N
_CHANNELS_LAST_ORDER = {channels_last: (1, 3, 2, 0), channels_last_3d: (1, 4, 3, 2, 0)}
_RANK = {channels_last: 4, channels_last_3d: 5}
CHANNELS_LAST_FORMATS = frozenset(_RANK)


def check_rank(fmt, ndim):
    """torch's error for a channels-last format on a tensor of the wrong rank."""
    rank = _RANK.get(fmt)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")


def is_contiguous_as(shape, strides, fmt):
    """Whether (element) ``strides`` are those of a ``fmt`` layout of ``shape``, size-1 dims
    ignored, as torch's ``is_contiguous(memory_format=fmt)``."""
    if fmt not in _CHANNELS_LAST_ORDER:  # contiguous_format (preserve: answered by the caller)
        order = range(len(shape) - 1, -1, -1)
    elif len(shape) != _RANK[fmt]:
        return False
    else:
        order = _CHANNELS_LAST_ORDER[fmt]
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def channels_last_permutation(fmt):
    """The dims of a ``fmt`` (channels-last) tensor in memory order, outermost first."""
    return tuple(reversed(_CHANNELS_LAST_ORDER[fmt]))
