"""``ember.distributed``: process groups and collectives on MPI (``torch.distributed``).

Collectives and point-to-point traffic run on MPI through ``mpi4py`` (the ``mpich`` wheels:
``pip install 'ember[distributed]'``); a small TCP store carries rendezvous data.  Backend
names "gloo" and "mpi" both mean this CPU backend, so torch scripts run unchanged.

Start ranks with ``emberrun`` / ``python -m ember.distributed.run`` (torchrun's flags), with
``mpiexec -n N python train.py``, or with ``ember.multiprocessing.spawn``.  How the
processes of separate launches become one MPI world is described in
``ember.distributed._mpi``.

Beyond torch: every collective and receive honours the group's timeout, and when a rank is
missing every waiting rank raises `DistBackendError` naming the collective, its sequence
number and the missing ranks; ranks that call different collectives are told at once
(``EMBER_DISTRIBUTED_CHECK=0`` turns that per-collective check off).  Object collectives
load with ``ember.load``'s weights-only rules.

mpi4py is imported (and MPI initialised) only when a process group is made, so ember works
without it.
"""
from ._errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from ._reduce_op import Backend, ReduceOp, _make_nccl_premul_sum
from ._store import FileStore, HashStore, PrefixStore, Store, TCPStore
from ._process_group import ProcessGroup, Work
from .distributed_c10d import (
    GroupMember, default_pg_timeout, destroy_process_group, get_backend,
    get_default_backend_for_device, get_global_rank, get_group_rank, get_node_local_rank,
    get_process_group_ranks, get_rank, get_world_size, group, init_process_group,
    is_available, is_backend_available, is_gloo_available, is_initialized, is_mpi_available,
    is_nccl_available, is_torchelastic_launched, is_ucc_available, is_xccl_available,
    new_group, new_subgroups, new_subgroups_by_enumeration)
from ._collectives import (
    P2POp, _all_gather_base, _reduce_scatter_base, all_gather, all_gather_coalesced,
    all_gather_into_tensor, all_reduce, all_reduce_coalesced, all_to_all, all_to_all_single,
    barrier, batch_isend_irecv, broadcast, gather, irecv, isend, monitored_barrier, recv,
    reduce, reduce_scatter, reduce_scatter_tensor, scatter, send)
from ._objects import all_gather_object, broadcast_object_list, gather_object, \
    scatter_object_list
from .device_mesh import DeviceMesh, init_device_mesh

# DDP's first gradient bucket (torch's constant, read by ember.nn.parallel)
_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


def _register_with_nn():
    # nn (DDP, SyncBatchNorm) sits below this package and may not import it: hand it down
    import sys
    from ..nn.parallel import _registry
    from .algorithms import join
    from .algorithms.ddp_comm_hooks import default_hooks
    _registry.register(sys.modules[__name__], default_hooks, join)


_register_with_nn()

__all__ = [
    "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "Backend",
    "ReduceOp", "FileStore", "HashStore", "PrefixStore", "Store", "TCPStore", "ProcessGroup",
    "Work", "GroupMember", "default_pg_timeout", "destroy_process_group", "get_backend",
    "get_default_backend_for_device", "get_global_rank", "get_group_rank",
    "get_node_local_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "is_available", "is_backend_available", "is_gloo_available",
    "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
    "is_ucc_available", "is_xccl_available", "new_group", "new_subgroups",
    "new_subgroups_by_enumeration", "P2POp", "all_gather", "all_gather_coalesced",
    "all_gather_into_tensor", "all_reduce", "all_reduce_coalesced", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "gather", "irecv",
    "isend", "monitored_barrier", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
    "scatter", "send", "all_gather_object", "broadcast_object_list", "gather_object",
    "scatter_object_list", "DeviceMesh", "init_device_mesh",
]


def __getattr__(name):
    # dist.GradBucket (the DDP comm-hook bucket) lives with DDP's reducer in ember.nn.parallel
    if name == "GradBucket":
        from ..nn.parallel._reducer import GradBucket
        return GradBucket
    raise AttributeError(f"module 'ember.distributed' has no attribute '{name}'")
