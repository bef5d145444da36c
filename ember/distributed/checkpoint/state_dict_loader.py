"""`load`: each rank reads, in place, the parts of the checkpoint its state dict holds,
whatever the number of ranks or the layout the checkpoint was saved with."""
from ._dist_wrapper import DistWrapper
from ._storage_utils import storage_setup, use_dist
from .default_planner import DefaultLoadPlanner
from .stateful import Stateful

__all__ = ["load", "load_state_dict"]


def _is_tensor(obj):
    from ..._core.tensor import Tensor
    return isinstance(obj, Tensor)


def load(state_dict, *, checkpoint_id=None, storage_reader=None, planner=None,
         process_group=None, no_dist=False):
    r"""Loads a distributed checkpoint into ``state_dict``, in place.

    Tensors are filled where they are (a `DTensor` receives its local piece), so the
    checkpoint reshards to whatever layout and number of ranks the caller has: saved on 2
    ranks, it loads on 1, 3 or 4, or in a plain process without a process group.  Each rank
    reads only the byte ranges its pieces need.  Non-tensor values are replaced; `Stateful`
    values get ``load_state_dict`` with what was loaded.  An empty ``state_dict`` receives
    every saved key as full tensors, in the saved nesting.

    Missing keys, shape mismatches and corrupt files raise `CheckpointException` (on every
    rank), naming the ranks and keys involved; key and shape errors are found before any
    data is read, but a corrupt shard can leave the tensors read before it filled.

    Example::
        >>> sd = {"model": model}
        >>> ember.distributed.checkpoint.load(sd, checkpoint_id="ckpt/step100")
    """
    reader = storage_setup(storage_reader, checkpoint_id, reader=True)
    planner = planner if planner is not None else DefaultLoadPlanner()
    dw = DistWrapper(process_group, use_dist(process_group, no_dist))
    _load_stateful(state_dict, reader, planner, dw)


def load_state_dict(state_dict, storage_reader, process_group=None, coordinator_rank=0,
                    no_dist=False, planner=None):
    """PyTorch 2.1's name of `load`."""
    storage_reader.reset()
    planner = planner if planner is not None else DefaultLoadPlanner()
    dw = DistWrapper(process_group, use_dist(process_group, no_dist), coordinator_rank)
    _load_stateful(state_dict, storage_reader, planner, dw)


def _load_stateful(state_dict, reader, planner, dw):
    stateful = {k: v for k, v in state_dict.items()
                if isinstance(v, Stateful) and not _is_tensor(v)}
    work = {k: (v.state_dict() if k in stateful else v) for k, v in state_dict.items()}
    _load(work, reader, planner, dw)
    for k, v in work.items():
        if k in stateful:
            stateful[k].load_state_dict(v)
        else:
            state_dict[k] = v


def _load(state_dict, reader, planner, dw):
    def local_plan():
        metadata = reader.read_metadata()
        planner.set_up_planner(state_dict, metadata, dw.is_coordinator)
        reader.set_up_storage_reader(metadata, dw.is_coordinator)
        return reader.prepare_local_plan(planner.create_local_plan())

    def global_plan(all_plans):
        return reader.prepare_global_plan(planner.create_global_plan(all_plans))

    central = dw.reduce_scatter("checkpoint load: planning", local_plan, global_plan)

    def read():
        reader.read_data(planner.finish_plan(central), planner).result()

    dw.all_gather("checkpoint load: reading", read)
