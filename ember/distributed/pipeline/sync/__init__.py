"""PyTorch 1.8's ``torch.distributed.pipeline.sync``: `Pipe`, GPipe-style micro-batching
with activation checkpointing over an ``nn.Sequential``."""
from .pipe import Pipe, PipeRRef

__all__ = ["Pipe", "PipeRRef"]
