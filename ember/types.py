"""``torch.types``: the type aliases annotations use."""
import os
from typing import IO, Union

from ._core.device import device as _device

__all__ = ["Number", "Device", "FileLike", "Storage"]

Number = Union[int, float, bool]
Device = Union[str, _device, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]


class Storage:
    """The storage interface annotations name (``torch.types.Storage``): what
    ``UntypedStorage``/``TypedStorage`` provide (``nbytes``, ``element_size``, ``data_ptr``,
    ``cpu``, ``is_shared``/``share_memory_``, ``from_file``).  As in torch it is a type for
    annotations only: storages are not instances of it."""
    _cdata: int
    device: _device
    dtype: object
    _torch_load_uninitialized: bool
