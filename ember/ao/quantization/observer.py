"""Observers: modules that watch tensors and choose quantization parameters from what they
saw (``torch.ao.quantization.observer``).  Only the per-tensor ones dynamic quantization uses
are here."""
import functools

import numpy as np

from ..._core import dtype as _dt
from ...nn.modules.module import Module
from ...ops import from_numpy, tensor
from .. import _qscheme

__all__ = ["ObserverBase", "MinMaxObserver", "PlaceholderObserver", "default_observer",
           "default_weight_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer"]

_EPS = float(np.finfo(np.float32).eps)


def _with_args(cls, **kwargs):
    """A factory for ``cls`` with ``kwargs`` bound (``Observer.with_args(dtype=...)``)."""
    return functools.partial(cls, **kwargs)


def _qrange(dtype, reduce_range, quant_min=None, quant_max=None):
    if quant_min is not None and quant_max is not None:
        if not quant_min <= 0 <= quant_max:
            raise AssertionError("Used-specified quantization range must include 0.")
        if quant_min >= quant_max:
            raise AssertionError("qmin must be strictly less than qmax for user-specified "
                                 "quantization range.")
        return quant_min, quant_max
    if dtype in (_dt.qint8, _dt.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (_dt.quint8, _dt.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (_dt.qint32, _dt.int32):
        return -2 ** 31, 2 ** 31 - 1
    raise ValueError(f"Unsupported dtype for an observer's quantization range: {dtype}")


class ObserverBase(Module):
    """Base observer: records ``dtype`` and whether activations are quantized dynamically."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    with_args = classmethod(_with_args)


class PlaceholderObserver(ObserverBase):
    """Observes nothing: it only carries ``dtype`` (and friends) for the conversion, e.g.
    the quint8 dynamic activations of ``default_dynamic_qconfig``."""

    def __init__(self, dtype=_dt.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme if qscheme is not None else _qscheme.per_tensor_affine
        self.quant_min, self.quant_max = quant_min, quant_max
        self.eps = eps
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception(  # noqa: TRY002  (torch's exception type)
            "calculate_qparams should not be called for PlaceholderObserver")


class MinMaxObserver(ObserverBase):
    """Tracks the running minimum and maximum of what it sees and maps that range to the
    quantized range: affine (``scale = (max - min) / (qmax - qmin)``) or symmetric
    (``scale = max|x| / ((qmax - qmin) / 2)``), per tensor."""

    def __init__(self, dtype=_dt.quint8, qscheme=_qscheme.per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        if qscheme not in (_qscheme.per_tensor_affine, _qscheme.per_tensor_symmetric):
            raise NotImplementedError(f"MinMaxObserver's qscheme only support "
                                      f"torch.per_tensor_symmetric and "
                                      f"torch.per_tensor_affine, got {qscheme}")
        self.qscheme = qscheme
        self.reduce_range = reduce_range
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        self.quant_min, self.quant_max = _qrange(dtype, reduce_range, quant_min, quant_max)
        self.eps = eps
        self.register_buffer("min_val", tensor(float("inf")))
        self.register_buffer("max_val", tensor(float("-inf")))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().float().numpy()
        lo = min(float(self.min_val), float(x.min()))
        hi = max(float(self.max_val), float(x.max()))
        self.min_val.fill_(lo)
        self.max_val.fill_(hi)
        return x_orig

    def calculate_qparams(self):
        """(scale, zero_point) tensors for the range seen so far."""
        lo, hi = np.float32(float(self.min_val)), np.float32(float(self.max_val))
        if lo == np.float32("inf") and hi == np.float32("-inf"):
            return tensor([1.0]), tensor([0])
        qmin, qmax = self.quant_min, self.quant_max
        neg, pos = min(lo, np.float32(0)), max(hi, np.float32(0))
        eps = np.float32(self.eps)
        if self.qscheme is _qscheme.per_tensor_symmetric:
            pos = max(-neg, pos)
            scale = max(pos / np.float32((qmax - qmin) / 2), eps)
            if self.dtype in (_dt.quint8, _dt.uint8):
                zero_point = (qmin + qmax) // 2 if self.has_customized_qrange else 128
            else:
                zero_point = 0
        else:
            scale = max((pos - neg) / np.float32(qmax - qmin), eps)
            zero_point = int(np.clip(qmin - int(np.rint(neg / scale)), qmin, qmax))
        return (from_numpy(np.array(scale, dtype=np.float32)),
                from_numpy(np.array(zero_point, dtype=np.int64)))

    def extra_repr(self):
        return f"min_val={float(self.min_val)}, max_val={float(self.max_val)}"


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=_dt.qint8,
                                                   qscheme=_qscheme.per_tensor_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=_dt.quint8, quant_min=0, quant_max=255, is_dynamic=True)
