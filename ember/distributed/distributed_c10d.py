"""Process groups: ``init_process_group``, ``new_group``, rank queries (torch.distributed's
``distributed_c10d``).  The collectives are in `_collectives`."""
import datetime
import hashlib
import os
import socket
import urllib.parse

from . import _mpi
from ._process_group import ProcessGroup
from ._reduce_op import Backend
from ._errors import DistNetworkError
from ._store import FileStore, HashStore, PrefixStore, TCPStore

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "get_rank", "get_world_size", "get_backend", "new_group", "new_subgroups",
           "new_subgroups_by_enumeration", "get_global_rank", "get_group_rank",
           "get_process_group_ranks", "group", "GroupMember", "is_gloo_available",
           "is_mpi_available", "is_nccl_available", "is_ucc_available", "is_xccl_available",
           "is_torchelastic_launched", "is_backend_available", "default_pg_timeout",
           "get_default_backend_for_device", "get_node_local_rank"]

default_pg_timeout = datetime.timedelta(minutes=30)


class _State:
    default_pg = None
    store = None
    inits = 0
    group_counts = {}
    groups = {}      # ProcessGroup -> its global ranks


_S = _State()
_NON_MEMBER = object()


class _WorldMeta(type):
    @property
    def WORLD(cls):  # noqa: N802 - torch's name
        return _S.default_pg


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name
    """``group.WORLD``: the default process group (None before ``init_process_group``)."""


class GroupMember(metaclass=_WorldMeta):
    """``GroupMember.WORLD`` and ``GroupMember.NON_GROUP_MEMBER`` (what `new_group` returns
    on ranks outside the new group)."""
    NON_GROUP_MEMBER = _NON_MEMBER


def is_available():
    """True when the distributed package can be used (mpi4py is installed)."""
    return _mpi.available()


def is_mpi_available():
    return _mpi.available()


def is_gloo_available():
    """True: ember's CPU backend on MPI serves the name "gloo"."""
    return _mpi.available()


def is_nccl_available():
    return False


def is_ucc_available():
    return False


def is_xccl_available():
    return False


def is_backend_available(backend):
    return Backend(backend) in (Backend.GLOO, Backend.MPI) and _mpi.available()


def get_default_backend_for_device(device):
    dev = str(device).split(":")[0]
    if dev == "cpu":
        return Backend.GLOO
    raise ValueError(f"ember.distributed has no default backend for device {device!r}")


def is_torchelastic_launched():
    """True when this process was started by ember's launcher (or torchrun)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank=None):
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment; pass fallback_rank")


def is_initialized():
    """True if the default process group has been initialized."""
    return _S.default_pg is not None


def _default():
    if _S.default_pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _S.default_pg


def _resolve(group):
    """The ProcessGroup for ``group`` (None: the default); None for a non-member."""
    if group is None:
        return _default()
    if group is _NON_MEMBER:
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"expected a ProcessGroup, got {type(group).__name__}")
    _default()
    return group


def _check_backend(backend):
    if backend is None:
        return Backend.GLOO
    name = str(backend).lower()
    if ":" in name or "," in name:  # "cpu:gloo,cuda:nccl"
        parts = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        if "cpu" in parts:
            return _check_backend(parts["cpu"])
        name = next(iter(parts.values()), name)
    if name in (Backend.GLOO, Backend.MPI):
        return name
    if name == Backend.NCCL:
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found! "
                           "ember's CPU backend is available as backend='gloo' (or 'mpi').")
    raise ValueError(f"Invalid backend: '{backend}'; ember supports 'gloo' and 'mpi' (both "
                     f"its CPU backend on MPI)")


def _as_timeout(timeout):
    if timeout is None:
        return default_pg_timeout
    if isinstance(timeout, datetime.timedelta):
        return timeout
    raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                    f"{type(timeout).__name__}")


def _env_int(name):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else None


def _store_hosted_by_rank0(comm, rank, host, port, world_size, timeout):
    """A TCPStore served by global ``rank`` 0, for a job that ``mpiexec`` started whole.

    Rank 0 opens the server first and broadcasts where it listens, or why it could not (a
    port already in use); the other ranks connect only after that, so a failed server makes
    every rank raise at once instead of leaving them retrying until the timeout.
    """
    ranks = comm.allgather(rank)
    root = ranks.index(0) if 0 in ranks else 0
    store, outcome = None, None
    if comm.rank == root:
        try:
            store = TCPStore(host or socket.gethostname(), port, world_size, is_master=True,
                             timeout=timeout, wait_for_workers=False)
            outcome = ("ok", host or socket.gethostname(), store.port)
        except Exception as e:  # noqa: BLE001 - sent to every rank, then raised there
            outcome = ("error", type(e).__name__, str(e))
            failure = e
    outcome = comm.bcast(outcome, root=root)
    if outcome[0] == "error":
        if comm.rank == root:
            raise failure
        raise DistNetworkError(f"init_process_group: rank 0 could not start the rendezvous "
                               f"store: {outcome[1]}: {outcome[2]}")
    if store is None:
        store = TCPStore(outcome[1], outcome[2], timeout=timeout)
    return store


def _rendezvous(init_method, rank, world_size, timeout):
    """(store, rank, world_size) for ``init_method`` (env://, tcp://, file://)."""
    url = urllib.parse.urlparse(init_method)
    query = dict(urllib.parse.parse_qsl(url.query))
    if rank < 0 and "rank" in query:
        rank = int(query["rank"])
    if world_size < 0 and "world_size" in query:
        world_size = int(query["world_size"])
    MPI = None
    if url.scheme == "env":
        if rank < 0:
            rank = _env_int("RANK") if _env_int("RANK") is not None else -1
        if world_size < 0:
            world_size = _env_int("WORLD_SIZE") if _env_int("WORLD_SIZE") is not None else -1
        if (rank < 0 or world_size < 0) and _mpi.under_mpiexec():
            MPI = _mpi.mpi()
            rank = MPI.COMM_WORLD.rank if rank < 0 else rank
            world_size = MPI.COMM_WORLD.size if world_size < 0 else world_size
        if rank < 0:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                             "environment variable RANK expected, but not set")
        if world_size < 0:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                             "environment variable WORLD_SIZE expected, but not set")
        addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        whole_job = None
        if (addr and port) or world_size != 1:
            MPI = MPI or (_mpi.mpi() if _mpi.under_mpiexec() else None)
            if MPI is not None and MPI.COMM_WORLD.size == world_size:
                whole_job = MPI.COMM_WORLD
        if addr and port:
            agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
            if whole_job is None or agent:
                store = TCPStore(addr, int(port), world_size, is_master=(rank == 0 and not agent),
                                 timeout=timeout, wait_for_workers=False)
                return store, rank, world_size
            return _store_hosted_by_rank0(whole_job, rank, addr, int(port), world_size, timeout), \
                rank, world_size
        if world_size == 1:
            return HashStore(), rank, world_size
        if whole_job is not None:
            # mpiexec started the whole job: rank 0 hosts the store on a free port.
            return _store_hosted_by_rank0(whole_job, rank, None, 0, world_size, timeout), \
                rank, world_size
        which = "MASTER_ADDR" if not addr else "MASTER_PORT"
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {which} expected, but not set")
    if url.scheme == "tcp":
        if rank < 0 or world_size < 0:
            raise ValueError(f"init_method {init_method!r} needs rank and world_size")
        store = TCPStore(url.hostname, url.port, world_size, is_master=(rank == 0),
                         timeout=timeout, wait_for_workers=False)
        return store, rank, world_size
    if url.scheme == "file":
        if rank < 0 or world_size < 0:
            raise ValueError(f"init_method {init_method!r} needs rank and world_size")
        path = urllib.parse.unquote(url.path if not url.netloc else url.netloc + url.path)
        store = FileStore(path, world_size)
        store.set_timeout(timeout)
        return store, rank, world_size
    raise ValueError(f"init_method {init_method!r}: unsupported scheme (use env://, tcp:// or "
                     f"file://)")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Initializes the default distributed process group.

    Rendezvous as in torch: ``init_method`` "env://" (the default: MASTER_ADDR, MASTER_PORT,
    RANK and WORLD_SIZE from the environment, or ``mpiexec``'s own ranks), "tcp://host:port"
    or "file:///path" (a fresh file) with ``rank`` and ``world_size``, or an explicit
    ``store``.  ``backend`` "gloo" and "mpi" both select ember's CPU backend on MPI; "nccl"
    raises on a machine without GPUs.  ``timeout`` (default 30 minutes) bounds every
    collective and receive of the group: past it, the waiting ranks raise `DistBackendError`.
    """
    if _S.default_pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _check_backend(backend)
    timeout = _as_timeout(timeout)
    if store is not None:
        if init_method is not None:
            raise ValueError("Cannot specify both init_method and store.")
        if rank < 0 or world_size <= 0:
            raise ValueError("world_size and rank must be given together with store")
    else:
        store, rank, world_size = _rendezvous(init_method or "env://", rank, world_size, timeout)
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is not in [0, world_size="
                         f"{world_size})")
    _S.inits += 1
    # a launcher restart reuses its store: keys of the earlier attempt must not be seen
    tag = f"ember/r{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/init{_S.inits}"
    join = PrefixStore(tag, store)
    comm = _mpi.form_world(join, rank, world_size, timeout.total_seconds())
    MPI = _mpi.mpi()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    pg = ProcessGroup(comm, range(world_size), PrefixStore(tag + "/pg", store),
                      timeout, backend=name, name=group_name or "0", desc="default_pg")
    _S.default_pg = pg
    _S.store = store
    _S.groups = {pg: list(range(world_size))}
    _S.group_counts = {}


def destroy_process_group(group=None):
    """Destroys ``group`` (default: every group, the default one included)."""
    if group is None or group is _S.default_pg:
        for pg in list(_S.groups):
            _free(pg)
        _S.groups = {}
        _S.default_pg = None
        _S.store = None
        return
    if group is _NON_MEMBER:
        return
    _free(group)
    _S.groups.pop(group, None)


def _free(pg):
    comm, pg._comm = pg._comm, None
    fp_comm, pg._fp_comm = pg._fp_comm, None
    pg._broken = "the process group was destroyed"
    for c in (comm, fp_comm):
        try:
            if c is not None and c != _mpi.mpi().COMM_NULL:
                c.Free()
        except Exception:  # noqa: BLE001 - a communicator with pending requests after a timeout
            pass


def get_rank(group=None):
    """This process's rank in ``group`` (default: the world); -1 if it is not a member."""
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None):
    """The number of processes in ``group`` (default: the world); -1 for a non-member."""
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    """The backend name of ``group``: "gloo" or "mpi", as given to init_process_group."""
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return Backend(pg._backend)


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = _resolve(group)
    return list(pg._ranks)


def get_global_rank(group, group_rank):
    """The global rank of ``group_rank`` in ``group``."""
    pg = _resolve(group)
    if not 0 <= group_rank < pg.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {pg.group_name!r}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank):
    """The rank of ``global_rank`` within ``group``."""
    return _resolve(group)._group_rank(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """Creates a new process group of the global ``ranks`` (default: all).

    Only the members take part in creating it (MPI's ``Comm_create_group``), so
    ``use_local_synchronization`` holds always; ranks outside the group get
    ``GroupMember.NON_GROUP_MEMBER``.  ``timeout`` defaults to the default group's.
    """
    world = _default()
    ranks = sorted(range(world.size()) if ranks is None else set(int(r) for r in ranks))
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r} is not in the world (size {world.size()})")
    _check_backend(backend)
    timeout = world._timeout if timeout is None else _as_timeout(timeout)
    digest = hashlib.sha1(",".join(map(str, ranks)).encode()).hexdigest()[:12]
    k = _S.group_counts.get(digest, 0) + 1
    _S.group_counts[digest] = k
    name = f"{digest}:{k}"
    if world.rank() not in ranks:
        return _NON_MEMBER
    MPI = _mpi.mpi()
    sub = world._comm.Create_group(world._comm.Get_group().Incl(ranks), tag=k % 32768)
    sub.Set_errhandler(MPI.ERRORS_RETURN)
    pg = ProcessGroup(sub, ranks, PrefixStore(f"ember/group/{name}", world._store.underlying_store
                                              if isinstance(world._store, PrefixStore)
                                              else world._store),
                      timeout, backend=world._backend, name=name, desc=group_desc or name)
    _S.groups[pg] = ranks
    return pg


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None):
    """Splits the world into equal subgroups of ``group_size`` consecutive ranks (default:
    LOCAL_WORLD_SIZE, one subgroup per node); returns ``(cur_subgroup, subgroups)``."""
    world = _default()
    n = world.size()
    if group_size is None:
        group_size = _env_int("LOCAL_WORLD_SIZE") or n
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    if group_size > n:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size "
                         f"({n})")
    if n % group_size != 0:
        raise ValueError("The world size must be divisible by 'group_size'")
    return new_subgroups_by_enumeration(
        [list(range(s, s + group_size)) for s in range(0, n, group_size)], timeout=timeout,
        backend=backend, pg_options=pg_options, group_desc=group_desc)


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None):
    """Creates one subgroup per list of ranks; returns ``(cur_subgroup, subgroups)``."""
    seen = set()
    for ranks in ranks_per_subgroup_list:
        overlap = seen.intersection(ranks)
        if overlap:
            raise ValueError(f"Rank {min(overlap)} has appeared in both subgroup "
                             f"{ranks_per_subgroup_list}")
        seen.update(ranks)
    cur, subgroups = None, []
    me = get_rank()
    for ranks in ranks_per_subgroup_list:
        pg = new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options,
                       group_desc=group_desc)
        subgroups.append(pg)
        if me in ranks:
            cur = pg
    return cur, subgroups
