"""Quantized neural-network modules (``torch.ao.nn``)."""
from . import quantized  # noqa: F401
