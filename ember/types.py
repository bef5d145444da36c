"""``torch.types``: the type aliases annotations use."""
import os
from typing import IO, Union

from ._core.device import device as _device

__all__ = ["Number", "Device", "FileLike"]

Number = Union[int, float, bool]
Device = Union[str, _device, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]
