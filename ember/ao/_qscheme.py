"""Quantization schemes (``torch.qscheme`` values such as ``torch.per_tensor_affine``)."""
from .._core import dtype as _dt

__all__ = ["qscheme", "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams"]


class qscheme:
    """How quantized values map to real ones: per tensor or per channel, affine or
    symmetric (``torch.qscheme``)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return _dt.REPR_PREFIX[0] + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
_ALL = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                            per_channel_symmetric, per_channel_affine_float_qparams)}


def _by_name(name):
    return _ALL[name]
