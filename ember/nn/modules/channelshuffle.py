"""``torch.nn.modules.channelshuffle``: ``ChannelShuffle``, by torch's path."""
from .pixelshuffle import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]
