"""Quantized modules (``torch.ao.nn.quantized``); the dynamically quantized ones are in
``dynamic``."""
from . import dynamic  # noqa: F401
