"""``ember.distributed.tensor`` (torch.distributed.tensor): DTensor basics.

`distribute_tensor`, `DTensor.from_local`, ``to_local``, ``full_tensor`` and
``redistribute`` over a `DeviceMesh` with `Shard`, `Replicate` and `Partial` placements.
ember's DTensor describes and moves distributed data (distributed checkpoints save and
reshard it); it does not run operators itself.
"""
from ..device_mesh import DeviceMesh, init_device_mesh
from ._api import DTensor, distribute_tensor
from ._factories import empty, full, ones, rand, randn, zeros
from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "DeviceMesh", "distribute_tensor", "init_device_mesh", "Shard",
           "Replicate", "Partial", "Placement", "empty", "full", "ones", "rand", "randn",
           "zeros"]
