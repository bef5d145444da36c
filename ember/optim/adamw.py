"""``torch.optim.adamw``: where torch's AdamW lives (``from torch.optim.adamw import AdamW``)."""
from .adam import AdamW

__all__ = ["AdamW"]
