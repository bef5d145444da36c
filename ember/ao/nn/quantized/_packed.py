"""Packed weights of dynamically quantized modules and the quantized-tensor value that
``weight()`` returns.

torch keeps a quantized weight in an opaque packed object (FBGEMM's layout) and hands out a
quantized tensor.  ember keeps the same information in plain pieces -- the integer values in
an int8 tensor, the per-tensor scale and zero point, the float bias -- so that state dicts
save as ordinary int8/float storages with ``ember.save`` and load with the safe loader.
"""
import numpy as np

from ... import _qscheme
from ...._core import dtype as _dt
from ....nn.parameter import Parameter
from ....ops import from_numpy
from ....serialization._torch_objects import QuantizedTensorRecord
from . import _kernels

__all__ = ["QuantizedTensor", "PackedLinearWeight"]


class QuantizedTensor:
    """A per-tensor affine quantized tensor: integer values with one scale and zero point
    (what torch's quantized modules return from ``weight()``).  It is a value to inspect or
    ``dequantize()``; arithmetic happens inside the quantized modules."""

    def __init__(self, int_repr, scale, zero_point, dtype):
        self._int = int_repr
        self._scale = float(scale)
        self._zero_point = int(zero_point)
        self.dtype = dtype

    @property
    def shape(self):
        return self._int.shape

    def size(self, dim=None):
        return self._int.size() if dim is None else self._int.size(dim)

    def dim(self):
        return self._int.dim()

    @property
    def is_quantized(self):
        return True

    def qscheme(self):
        return _qscheme.per_tensor_affine

    def int_repr(self):
        """The integer values (int8 for qint8, uint8 for quint8, int32 for qint32)."""
        return self._int.clone()

    def q_scale(self):
        return self._scale

    def q_zero_point(self):
        return self._zero_point

    def dequantize(self):
        """``(int_repr - zero_point) * scale`` as float32."""
        ints = self._int.numpy().astype(np.float32)
        return from_numpy((ints - np.float32(self._zero_point)) * np.float32(self._scale))

    def __repr__(self):
        body = repr(self.dequantize()).rsplit(")", 1)[0]
        return (f"{body}, size={tuple(self.shape)}, dtype={self.dtype},\n"
                f"       quantization_scheme={self.qscheme()}, scale={self._scale}, "
                f"zero_point={self._zero_point})")


class PackedLinearWeight:
    """One linear weight ready for dynamic quantized products: qint8 values with their
    scale and zero point (or float16 values for the fp16 qconfig) and the float bias."""

    def __init__(self, dtype, weight, scale, zero_point, bias):
        self.dtype = dtype
        self.weight = weight          # ember int8 tensor (qint8) or float16 tensor (float16)
        self.scale = float(scale)
        self.zero_point = int(zero_point)
        self.bias = bias              # float tensor or None

    @classmethod
    def from_float(cls, weight, bias, dtype, observer=None):
        """Pack a float ``weight``: rounded to float16 for the float16 dtype, else quantized to
        qint8 with the qparams ``observer`` (a fresh weight observer) chooses for it."""
        w = weight.detach().float().numpy()
        b = None if bias is None else bias.detach().float().clone()
        if dtype is _dt.float16:
            return cls(dtype, from_numpy(w.astype(np.float16)), 1.0, 0, b)
        if observer is None or observer.dtype is not _dt.qint8:
            raise RuntimeError(f"dynamic quantized weights need a qint8 weight observer, got "
                               f"{observer if observer is None else observer.dtype}")
        observer(weight.detach().float())
        scale_t, zp_t = observer.calculate_qparams()
        scale, zp = float(scale_t.reshape(-1)[0]), int(zp_t.reshape(-1)[0])
        ints = _kernels.quantize(w, scale, zp, -128, 127, np.int8)
        return cls(dtype, from_numpy(ints), scale, zp, b)

    def quantized_weight(self):
        if self.dtype is _dt.float16:
            return self.weight.float()
        return QuantizedTensor(self.weight, self.scale, self.zero_point, _dt.qint8)

    def apply(self, x, reduce_range=True):
        """The float32 array ``x @ W.T + b`` computed the quantized way (``x``: an array)."""
        bias = None if self.bias is None else self.bias.numpy()
        if self.dtype is _dt.float16:
            return _kernels.linear_fp16(x, self.weight.numpy(), bias)
        return _kernels.linear_dynamic(x, self.weight.numpy(), self.scale, self.zero_point,
                                       bias, reduce_range)

    # state-dict form, torch's: (weight, bias Parameter), the weight a quantized tensor for
    # qint8 (ember.save writes it as torch does, _rebuild_qtensor) and the float16-rounded
    # values as float32 for float16.  The weights-only loader reads both back.
    def to_state(self):
        bias = None if self.bias is None else Parameter(self.bias)
        if self.dtype is _dt.qint8:
            return (QuantizedTensorRecord(self.weight, self.scale, self.zero_point), bias)
        return (self.weight.float(), bias)

    @classmethod
    def from_state(cls, dtype, state):
        if len(state) == 2:
            weight, bias = state
            bias = None if bias is None else bias.detach()
            if isinstance(weight, QuantizedTensorRecord):
                return cls(dtype, weight.int_repr, weight.scale, weight.zero_point, bias)
            return cls(dtype, weight.detach().half(), 1.0, 0, bias)
        weight, scale, zero_point, bias = state  # files of earlier ember versions
        return cls(dtype, weight, scale, zero_point, bias)
