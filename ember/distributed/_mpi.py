"""MPI access for ember.distributed: the lazy import of mpi4py and the forming of one world.

How processes become one MPI communicator
-----------------------------------------
* Started by ``mpiexec -n N`` (directly, or by ember's launcher on each node): the processes
  of one ``mpiexec`` launch share ``MPI.COMM_WORLD``; call that a *block*.
* When ``COMM_WORLD`` already holds the whole job (``mpiexec -n N python train.py``), it is the
  world as it is.
* Otherwise the blocks join, torchrun style, through the rendezvous store: the block holding
  global rank 0 opens an MPI port (``MPI.Open_port``) and publishes it in the store; every
  other block takes a ticket (``store.add``), waits until it is admitted, and ``Connect``\\ s,
  while everyone already joined ``Accept``\\ s together; ``Intercomm.Merge`` then grows the
  world by that block.  Admitting one ticket at a time keeps concurrent joiners from racing
  for the same ``Accept``.  A final ``Split`` orders the world by global rank.
* ``ember.multiprocessing.spawn`` and ``emberrun`` start every rank as its own
  ``mpiexec -n 1`` launch, so each rank is a block and exits (or dies) on its own.

Limit measured with the MPICH wheel (5.0): two *singletons* (plain ``python`` processes that
initialised MPI without ``mpiexec``) cannot connect to each other (MPICH: "Local and remote
groups in MPI_Intercomm_create must not overlap" / "not disjoint"), while a singleton and a
process started by ``mpiexec`` can.  So at most one rank of a job may be a plain process;
`form_world` detects a second one and raises an error saying how to start ranks instead.
"""
import os
import time

import numpy as np

from ._errors import DistBackendError

_MPI = None


def mpi():
    """The ``mpi4py.MPI`` module, imported (and MPI initialised) on first use."""
    global _MPI
    if _MPI is None:
        try:
            import mpi4py
        except ImportError:
            raise RuntimeError("ember.distributed needs mpi4py and an MPI library: install "
                               "ember's 'distributed' extra (pip install 'ember[distributed]', "
                               "which brings the mpi4py and mpich wheels)") from None
        mpi4py.rc.thread_level = "multiple"
        from mpi4py import MPI
        _MPI = MPI
    return _MPI


def available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def under_mpiexec():
    """True when a process manager (mpiexec/hydra, slurm's PMI) started this process."""
    return any(k in os.environ for k in ("PMI_FD", "PMI_RANK", "PMI_PORT", "PMIX_RANK"))


def _wait_keys(store, keys, deadline, what):
    left = deadline - time.monotonic()
    if left <= 0:
        raise DistBackendError(f"ember.distributed: timed out forming the MPI world ({what})")
    store.wait(keys, left)


def form_world(store, rank, world_size, timeout_s):
    """One MPI communicator of ``world_size`` processes, ordered by global ``rank``."""
    MPI = mpi()
    block = MPI.COMM_WORLD
    if block.size == world_size:
        if rank != block.rank:
            # A job launched whole by mpiexec but given other ranks: order by the given ranks.
            return block.Split(0, rank)
        return block.Dup()
    if block.size > world_size:
        raise ValueError(f"init_process_group: world_size={world_size} but this process's "
                         f"mpiexec launch already has {block.size} processes")
    deadline = time.monotonic() + timeout_s
    if block.size == 1 and not under_mpiexec():
        if store.add("mpi/singletons", 1) > 1:
            raise DistBackendError(
                "ember.distributed: a second rank was started as a plain process (an MPI "
                "singleton); MPICH cannot connect two singletons.  Start the ranks with "
                "'emberrun'/'python -m ember.distributed.run', with 'mpiexec', or with "
                "ember.multiprocessing.spawn (rank 0 alone may be a plain process)")
    lo = block.allreduce(rank, op=MPI.MIN)
    comm = block
    port = None
    if lo == 0:
        if block.rank == 0:
            port = MPI.Open_port()
            store.set("mpi/port", port)
        port = block.bcast(port, root=0)
        ticket = 1
    else:
        if block.rank == 0:
            ticket = store.add("mpi/tickets", 1)
            store.set(f"mpi/ticket/{ticket}", b"1")
            _wait_keys(store, [f"mpi/admit/{ticket}"], deadline, f"admission of rank {rank}")
            port = store.get("mpi/port").decode()
        ticket, port = block.bcast((ticket if block.rank == 0 else None, port), root=0)
        inter = block.Connect(port, root=0)
        comm = inter.Merge(high=True)
        inter.Free()
        ticket = comm.bcast(None, root=0)
    while comm.size < world_size:
        if comm.rank == 0:
            _wait_keys(store, [f"mpi/ticket/{ticket}"], deadline,
                       f"{world_size - comm.size} rank(s) still missing")
            store.set(f"mpi/admit/{ticket}", b"1")
        inter = comm.Accept(port, root=0)
        merged = inter.Merge(high=False)
        inter.Free()
        if comm is not block:
            comm.Free()
        comm = merged
        ticket = comm.bcast(ticket + 1 if comm.rank == 0 else None, root=0)
    if lo == 0 and block.rank == 0:
        MPI.Close_port(port)
    ranks = comm.allgather(rank)
    if sorted(ranks) != list(range(world_size)):
        raise ValueError(f"init_process_group: the joined processes have ranks {sorted(ranks)}; "
                         f"expected each of 0..{world_size - 1} exactly once")
    world = comm.Split(0, rank)
    if comm is not block:
        comm.Free()
    return world


# ---- dtypes --------------------------------------------------------------------------
def reduce_type(np_dtype):
    """(MPI datatype, compute dtype) for reductions on ``np_dtype``; compute dtype differs
    from the tensor's when MPI has no arithmetic for it (float16/bfloat16: float32)."""
    MPI = mpi()
    table = _TYPES.get("table")
    if table is None:
        table = {np.dtype(np.float32): MPI.FLOAT, np.dtype(np.float64): MPI.DOUBLE,
                 np.dtype(np.int8): MPI.INT8_T, np.dtype(np.int16): MPI.INT16_T,
                 np.dtype(np.int32): MPI.INT32_T, np.dtype(np.int64): MPI.INT64_T,
                 np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.uint16): MPI.UINT16_T,
                 np.dtype(np.uint32): MPI.UINT32_T, np.dtype(np.uint64): MPI.UINT64_T,
                 np.dtype(np.complex64): MPI.C_FLOAT_COMPLEX,
                 np.dtype(np.complex128): MPI.C_DOUBLE_COMPLEX,
                 np.dtype(np.bool_): MPI.UINT8_T}
        _TYPES["table"] = table
    dt = np.dtype(np_dtype)
    if dt in table:
        return table[dt], dt
    if dt.kind == "V" or dt.itemsize <= 2:  # ml_dtypes halves (bfloat16, float16, float8)
        return MPI.FLOAT, np.dtype(np.float32)
    raise TypeError(f"ember.distributed: no MPI reduction for dtype {dt}")


_TYPES = {}
