"""`save` / `async_save`: every rank writes its own shards in parallel, the coordinator
writes the index last."""
import threading
from concurrent.futures import ThreadPoolExecutor

from ..tensor._api import DTensor
from ._codec import register_dataclass
from ._dist_wrapper import DistWrapper
from ._storage_utils import storage_setup, use_dist
from .default_planner import DefaultSavePlanner
from .stateful import Stateful
from .storage import WriteResult

__all__ = ["save", "save_state_dict", "async_save"]

register_dataclass(WriteResult)


def _is_tensor(obj):
    from ..._core.tensor import Tensor
    return isinstance(obj, Tensor)


def _stateful_to_state_dict(state_dict):
    return {k: (v.state_dict() if isinstance(v, Stateful) and not _is_tensor(v) else v)
            for k, v in state_dict.items()}


def _rank_local(use_collectives, process_group, no_dist):
    """(rank, world size) when this save runs without collectives on several ranks."""
    if use_collectives or not use_dist(process_group, no_dist):
        return None
    from ... import distributed as dist
    world = dist.get_world_size(process_group)
    return (dist.get_rank(process_group), world) if world > 1 else None


def save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist=False, use_collectives=True):
    r"""Saves ``state_dict`` as a distributed checkpoint, every rank in parallel.

    Call it on every rank of ``process_group`` (default: the world, if a process group
    exists; otherwise it is a one-process save).  Each rank writes only its own shards
    (`DTensor` pieces, its ZeRO optimizer state); a value several ranks hold (a replicated
    tensor, a plain number) is written once.  Values that are `Stateful` (modules,
    optimizers) are saved through their ``state_dict()``; nested dicts become dotted keys.

    Args:
        state_dict: the dict to save.
        checkpoint_id: the checkpoint directory (or give ``storage_writer``).
        storage_writer: a `StorageWriter` (default `FileSystemWriter`).
        planner: a `SavePlanner` (default `DefaultSavePlanner`).
        process_group: the ranks taking part.
        no_dist: save from this process alone, without collectives.
        use_collectives: with False, each rank plans and writes alone, as in torch: its
            own data file and its own metadata piece ``__<rank>.metadata`` (atomic per
            rank; replicated values are written by every rank).  `load` merges the pieces,
            so such a checkpoint also loads on another number of ranks.

    Returns:
        The checkpoint's `Metadata`.  Failures raise `CheckpointException` on every rank.

    Example::
        >>> ember.distributed.checkpoint.save({"model": model}, checkpoint_id="ckpt/step100")
    """
    writer = storage_setup(storage_writer, checkpoint_id, reader=False)
    planner = planner if planner is not None else DefaultSavePlanner()
    local = _rank_local(use_collectives, process_group, no_dist)
    if local is not None:
        return _save_rank_local(_stateful_to_state_dict(state_dict), writer, planner,
                                process_group, *local)
    dw = DistWrapper(process_group, use_dist(process_group, no_dist))
    return _save(_stateful_to_state_dict(state_dict), writer, planner, dw)


def save_state_dict(state_dict, storage_writer, process_group=None, coordinator_rank=0,
                    no_dist=False, planner=None):
    """PyTorch 2.1's name of `save`."""
    storage_writer.reset()
    planner = planner if planner is not None else DefaultSavePlanner()
    dw = DistWrapper(process_group, use_dist(process_group, no_dist), coordinator_rank)
    return _save(_stateful_to_state_dict(state_dict), storage_writer, planner, dw)


def _save(state_dict, writer, planner, dw):
    meta = {}

    def local_plan():
        planner.set_up_planner(state_dict, writer.storage_meta(), dw.is_coordinator)
        writer.set_up_storage_writer(dw.is_coordinator)
        return writer.prepare_local_plan(planner.create_local_plan())

    def global_plan(all_plans):
        plans, metadata = planner.create_global_plan(all_plans)
        meta["md"] = metadata
        return writer.prepare_global_plan(plans)

    central = dw.reduce_scatter("checkpoint save: planning", local_plan, global_plan)

    def write():
        return writer.write_data(planner.finish_plan(central), planner).result()

    def finish(all_results):
        writer.finish(meta["md"], all_results)
        return meta["md"]

    return dw.all_reduce("checkpoint save: writing", write, finish)


def _save_rank_local(state_dict, writer, planner, process_group, rank, world):
    from ... import distributed as dist
    from .api import CheckpointException
    planner._one_rank_of_many = True
    try:
        planner.set_up_planner(state_dict, writer.storage_meta(), rank == 0)
        writer.set_up_storage_writer(rank == 0, rank=rank, use_collectives=False,
                                     world_size=world)
        plan = writer.prepare_local_plan(planner.create_local_plan())
        plans, metadata = planner.create_global_plan([plan])
        plan = writer.prepare_global_plan(plans)[0]
        results = writer.write_data(planner.finish_plan(plan), planner).result()
        writer.finish(metadata, [results])
    except Exception as e:
        failure = e
    else:
        failure = None
    # as torch: when save returns on any rank, every rank's piece is complete (a failing
    # rank still joins, so the others do not wait for it forever)
    dist.barrier(process_group)
    if failure is not None:
        raise CheckpointException("checkpoint save (use_collectives=False)",
                                  {rank: failure}) from failure
    return metadata


_ASYNC = {"lock": threading.Lock(), "groups": {}, "executor": None}


def _stage(state_dict):
    """A copy of every tensor, so training may go on while the copy is written."""
    def copy(v):
        if isinstance(v, DTensor):
            return DTensor(v.to_local().detach().clone(), v.device_mesh, v.placements,
                           tuple(v.shape))
        if _is_tensor(v):
            return v.detach().clone()
        if isinstance(v, dict):
            return {k: copy(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(copy(x) for x in v) if not hasattr(v, "_fields") else v
        return v
    return copy(state_dict)


def async_save(state_dict, *, checkpoint_id=None, storage_writer=None, planner=None,
               process_group=None, async_checkpointer_type=None, async_stager=None,
               no_dist=False, use_collectives=True):
    r"""Like `save`, but returns once the tensors are copied; the writing goes on in a
    background thread.  Returns a ``concurrent.futures.Future`` whose ``result()`` is the
    `Metadata` (or raises the save's `CheckpointException`).

    The background save talks over its own communicator (made once per process group, by
    every rank on its first ``async_save``), so training collectives on the main thread
    and the save never share one.
    """
    from ... import distributed as dist
    staged = _stage(_stateful_to_state_dict(state_dict))
    distributed = use_dist(process_group, no_dist)
    group = None
    with _ASYNC["lock"]:
        if distributed:
            key = id(process_group) if process_group is not None else "world"
            group = _ASYNC["groups"].get(key)
            if group is None:
                ranks = dist.get_process_group_ranks(process_group if process_group is not None
                                                     else dist.group.WORLD)
                group = _ASYNC["groups"][key] = dist.new_group(ranks)
        if _ASYNC["executor"] is None:
            _ASYNC["executor"] = ThreadPoolExecutor(1, thread_name_prefix="ember-dcp")
    return _ASYNC["executor"].submit(save, staged, checkpoint_id=checkpoint_id,
                                     storage_writer=storage_writer, planner=planner,
                                     process_group=group, no_dist=not distributed,
                                     use_collectives=use_collectives)
