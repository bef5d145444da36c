"""QConfig: which observers quantize a module's activations and weights
(``torch.ao.quantization.qconfig``)."""
from collections import namedtuple

from ..._core import dtype as _dt
from ...nn.modules.module import Module
from .observer import (PlaceholderObserver, default_dynamic_quant_observer,
                       default_weight_observer)

__all__ = ["QConfig", "default_dynamic_qconfig", "float16_dynamic_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Describes how to quantize a layer by giving the observer *factories* (classes or
    ``Observer.with_args(...)``) for its activations and its weights."""
    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class "
                             "instead. Use MyObserver.with_args(x=1) to override arguments to "
                             "constructor if needed")
        return super().__new__(cls, activation, weight)


default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                  weight=default_weight_observer)
"""Dynamic quantization: quint8 activations quantized per call, symmetric qint8 weights."""

float16_dynamic_qconfig = QConfig(
    activation=PlaceholderObserver.with_args(dtype=_dt.float16, is_dynamic=True),
    weight=PlaceholderObserver.with_args(dtype=_dt.float16))
"""Dynamic quantization to float16 weights (activations stay float)."""
