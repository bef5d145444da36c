"""``torch.utils.dlpack``: zero-copy exchange of tensors with other array libraries through
DLPack (``__dlpack__`` objects or legacy capsules), on NumPy's DLPack support."""
import enum

import numpy as np

from .._core.dispatch import overridable
from .._core.tensor import Tensor
from ..ops.creation import from_numpy

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """Device types of the DLPack specification."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


class _Capsule:
    """A legacy DLPack capsule presented as a producer object (NumPy imports only those)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCPU, 0)


@overridable
def from_dlpack(ext_tensor):
    """Converts a tensor from an external library into an ember ``Tensor``, sharing its
    memory.  ``ext_tensor`` is an object with ``__dlpack__``/``__dlpack_device__`` (a torch
    tensor, a NumPy array, ...) or a DLPack capsule (`to_dlpack`'s result; it can be
    consumed once, and ember copies what NumPy imports from it read-only)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if hasattr(ext_tensor, "__dlpack__"):
        device = ext_tensor.__dlpack_device__()
        if int(device[0]) not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
            raise RuntimeError(f"from_dlpack: unsupported device type "
                               f"{DLDeviceType(int(device[0])).name} (ember stores CPU arrays "
                               f"here; a registered device backend imports its own arrays)")
        array = np.from_dlpack(ext_tensor)
    else:
        array = np.from_dlpack(_Capsule(ext_tensor))
        if not array.flags.writeable:
            # NumPy imports a legacy (unversioned) capsule read-only, without the means to
            # make it writable: ember copies it rather than hand out an unwritable tensor
            array = array.copy()
    return from_numpy(array)


def to_dlpack(tensor):
    """Returns an opaque DLPack capsule for ``tensor`` (sharing its memory), to hand to
    another library's ``from_dlpack``."""
    return tensor.__dlpack__()
