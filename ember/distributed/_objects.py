"""Object collectives: picklable Python objects moved between ranks.

Unlike torch (whose object collectives unpickle whatever a peer sends, so a peer can run code
on every rank), ember serializes objects with ``ember.save`` and loads them with
``ember.load(weights_only=True)``: tensors, containers and primitive values arrive, anything
else needs ``ember.serialization.add_safe_globals`` first, as for a checkpoint.
"""
import io

import numpy as np

from ._collectives import _run, _src_rank
from ._mpi import mpi
from .distributed_c10d import _resolve

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object",
           "scatter_object_list"]


def _dump(obj):
    from ..serialization import save
    buf = io.BytesIO()
    save(obj, buf)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _load(raw):
    from ..serialization import load
    return load(io.BytesIO(raw.tobytes()), weights_only=True)


def _gather_sizes(pg, n):
    MPI = mpi()
    mine = np.array([n], np.int64)
    sizes = np.empty(pg.size(), np.int64)
    _run(pg, "all_gather_object(sizes)", 1,
         lambda: pg._comm.Iallgather([mine, MPI.INT64_T], [sizes, MPI.INT64_T]))
    return [int(s) for s in sizes]


def all_gather_object(object_list, obj, group=None):
    """Gathers picklable ``obj`` from every rank into ``object_list`` (one per rank)."""
    pg = _resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries, "
                         f"expected the group's size {pg.size()}")
    MPI = mpi()
    data = _dump(obj)
    sizes = _gather_sizes(pg, data.size)
    displ = np.cumsum([0] + sizes[:-1]).tolist()
    buf = np.empty(sum(sizes), np.uint8)
    _run(pg, "all_gather_object", 0,
         lambda: pg._comm.Iallgatherv([data, MPI.BYTE], [buf, (sizes, displ), MPI.BYTE]))
    for i, (d, c) in enumerate(zip(displ, sizes)):
        object_list[i] = _load(buf[d:d + c])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Gathers picklable ``obj`` from every rank into ``object_gather_list`` on ``dst``."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _src_rank(pg, dst, group_dst, "dst")
    me = pg.rank() == root
    if me and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: on the destination rank object_gather_list must have "
                         f"{pg.size()} entries")
    MPI = mpi()
    data = _dump(obj)
    sizes = _gather_sizes(pg, data.size)
    displ = np.cumsum([0] + sizes[:-1]).tolist()
    buf = np.empty(sum(sizes), np.uint8) if me else None
    _run(pg, "gather_object", 0,
         lambda: pg._comm.Igatherv([data, MPI.BYTE],
                                   [buf, (sizes, displ), MPI.BYTE] if me else None, root=root))
    if me:
        for i, (d, c) in enumerate(zip(displ, sizes)):
            object_gather_list[i] = _load(buf[d:d + c])


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Broadcasts the picklable objects of ``object_list`` from ``src``; other ranks' lists
    (of the same length) are filled in place."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _src_rank(pg, src, group_src)
    MPI = mpi()
    me = pg.rank() == root
    data = _dump(list(object_list)) if me else None
    size = np.array([data.size if me else 0], np.int64)
    _run(pg, "broadcast_object_list(size)", 1,
         lambda: pg._comm.Ibcast([size, MPI.INT64_T], root=root))
    buf = data if me else np.empty(int(size[0]), np.uint8)
    _run(pg, "broadcast_object_list", 0, lambda: pg._comm.Ibcast([buf, MPI.BYTE], root=root))
    if not me:
        objs = _load(buf)
        if len(objs) != len(object_list):
            raise ValueError(f"broadcast_object_list: rank {root} sent {len(objs)} objects, "
                             f"this rank's list has {len(object_list)} entries")
        object_list[:] = objs


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """Scatters ``scatter_object_input_list`` from ``src``: rank i gets entry i in
    ``scatter_object_output_list[0]``."""
    pg = _resolve(group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    root = _src_rank(pg, src, group_src)
    me = pg.rank() == root
    MPI = mpi()
    counts = np.zeros(pg.size(), np.int64)
    send = None
    if me:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: on the source rank the input list must have "
                             f"{pg.size()} entries")
        parts = [_dump(o) for o in scatter_object_input_list]
        counts[:] = [p.size for p in parts]
        send = np.concatenate(parts)
    _run(pg, "scatter_object_list(sizes)", 1,
         lambda: pg._comm.Ibcast([counts, MPI.INT64_T], root=root))
    c = counts.tolist()
    displ = np.cumsum([0] + c[:-1]).tolist()
    buf = np.empty(c[pg.rank()], np.uint8)
    _run(pg, "scatter_object_list", 0,
         lambda: pg._comm.Iscatterv([send, (c, displ), MPI.BYTE] if me else None,
                                    [buf, MPI.BYTE], root=root))
    scatter_object_output_list[0] = _load(buf)
