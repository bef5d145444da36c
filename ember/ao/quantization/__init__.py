"""Quantization (``torch.ao.quantization``; ``torch.quantization`` is its legacy path).

Post-training dynamic quantization: ``quantize_dynamic`` swaps ``Linear``, ``LSTM``,
``GRU`` and the recurrent cells for versions whose weights are stored as int8 (per tensor,
torch's default symmetric qconfig) or float16, and whose activations are quantized on
every call from their own range -- products are computed with integer arithmetic, outputs
stay float32.
"""
from .observer import (MinMaxObserver, ObserverBase, PlaceholderObserver,  # noqa: F401
                       default_dynamic_quant_observer, default_observer,
                       default_placeholder_observer, default_weight_observer)
from .qconfig import QConfig, default_dynamic_qconfig, float16_dynamic_qconfig  # noqa: F401
from .quantization_mappings import get_default_dynamic_quant_module_mappings  # noqa: F401
from .quantize import convert, propagate_qconfig_, quantize_dynamic, swap_module  # noqa: F401

__all__ = ["quantize_dynamic", "convert", "propagate_qconfig_", "swap_module", "QConfig",
           "default_dynamic_qconfig", "float16_dynamic_qconfig", "MinMaxObserver",
           "ObserverBase", "PlaceholderObserver", "default_observer", "default_weight_observer",
           "default_dynamic_quant_observer", "default_placeholder_observer",
           "get_default_dynamic_quant_module_mappings"]
