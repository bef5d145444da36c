"""``ember.distributed.rpc``: remote calls and remote references (``torch.distributed.rpc``).

Workers join with `init_rpc` (the same rendezvous as ``init_process_group``: env://
MASTER_ADDR/MASTER_PORT, tcp:// or file://) into one MPI communicator of their own; calls
travel over MPI point-to-point, driven by a progress thread (see ``_agent``).  Tensors
travel as raw buffers.  Inside a ``ember.distributed.autograd.context()`` the tensors that
require grad are recorded on both sides, so ``dist_autograd.backward`` sends their
gradients back along the same edges.

Beyond torch, which unpickles whatever a peer sends: a worker only resolves the program's
own functions and classes, ember's, and plain data types (see ``_wire``); a request naming
``os.system`` or ``eval`` is refused and the caller gets `pickle.UnpicklingError`.

RRefs are reference counted across workers: an owner drops a value once no worker holds
an RRef to it.  Inside ``ember.profiler.profile()`` / ``ember.autograd.profiler.profile()``
each call shows up as an event (``rpc_sync#fn(worker0 -> worker1)``) whose children are the
operator events the callee recorded while running it, with their timings and
``node_id``/``is_remote`` set.
"""
import datetime
import enum
import time

from . import _state, functions
from ._agent import Agent, WorkerInfo
from ._rref import RRef, _reduce_rref

__all__ = ["init_rpc", "shutdown", "rpc_sync", "rpc_async", "remote", "get_worker_info",
           "WorkerInfo", "RRef", "BackendType", "TensorPipeRpcBackendOptions",
           "RpcBackendOptions", "functions", "is_available"]

UNSET_RPC_TIMEOUT = -1.0
DEFAULT_RPC_TIMEOUT_SEC = 60.0
DEFAULT_SHUTDOWN_TIMEOUT = 0


def is_available():
    from .. import _mpi
    return _mpi.available()


class BackendType(enum.Enum):
    """The RPC backends; TENSORPIPE names ember's MPI transport."""
    TENSORPIPE = "TENSORPIPE"


class RpcBackendOptions:
    """Options common to RPC backends: ``rpc_timeout`` (seconds) and ``init_method``."""

    def __init__(self, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC, init_method="env://"):
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = init_method


_KNOWN_DEVICE_TYPES = {"cuda", "xpu", "mps", "hpu", "xla", "meta", "mtia", "privateuseone"}


def _cpu_device(d, what):
    from .._ember import device as _device
    dev = d if not isinstance(d, int) else f"cuda:{d}"
    try:
        dev = _device(dev)
    except RuntimeError:
        if str(dev).split(":")[0] in _KNOWN_DEVICE_TYPES:
            raise ValueError(f"{what}: device {dev} is not available on this machine (only "
                             f"cpu)") from None
        raise
    if dev.type != "cpu":
        raise ValueError(f"{what}: device {dev} is not available on this machine (only cpu)")
    return dev


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """The backend options of `init_rpc` (torch's TensorPipe options).

    Args:
        num_worker_threads (int): threads serving incoming requests (default 16).
        rpc_timeout (float): default timeout of RPCs, in seconds (default 60).
        init_method (str): the rendezvous URL (default "env://").
        device_maps (Dict[str, Dict]): per-callee maps of this worker's devices to the
            callee's; every device must exist (cpu here).
        devices (List): the devices this worker's RPC agent may use.
    """

    def __init__(self, *, num_worker_threads=16, rpc_timeout=DEFAULT_RPC_TIMEOUT_SEC,
                 init_method="env://", device_maps=None, devices=None, _transports=None,
                 _channels=None):
        super().__init__(rpc_timeout, init_method)
        if int(num_worker_threads) < 1:
            raise ValueError(f"num_worker_threads must be positive, got {num_worker_threads}")
        self.num_worker_threads = int(num_worker_threads)
        self.device_maps = {}
        for to, m in (device_maps or {}).items():
            self.set_device_map(to, m)
        self.devices = [_cpu_device(d, "devices") for d in (devices or [])]

    def set_device_map(self, to, device_map):
        """Sets the map from this worker's devices to those of worker ``to``."""
        full = {}
        for k, v in device_map.items():
            src, dst = _cpu_device(k, "set_device_map"), _cpu_device(v, "set_device_map")
            if src in full:
                raise ValueError(f"Invalid device_map: device {src} mapped twice")
            full[src] = dst
        targets = list(full.values())
        if len(set(targets)) != len(targets):
            raise ValueError(f"Invalid device_map, has duplicate target devices: {device_map}")
        if to in self.device_maps:
            merged = dict(self.device_maps[to])
            merged.update(full)
            if len(set(merged.values())) != len(merged):
                raise ValueError(f"Invalid device_map for {to}: duplicate target devices "
                                 f"after merging {device_map}")
            full = merged
        self.device_maps[to] = full

    def _set_devices(self, devices):
        self.devices = [_cpu_device(d, "devices") for d in devices]


_INITS = [0]


def init_rpc(name, backend=None, rank=-1, world_size=None, rpc_backend_options=None):
    """Initializes RPC primitives such as the local RPC agent and distributed autograd,
    which immediately makes the current process ready to send and receive RPCs.

    Args:
        name (str): a globally unique name of this node (e.g. "trainer3", "ps").
        backend (BackendType, optional): only ``BackendType.TENSORPIPE``.
        rank (int): a globally unique id/rank of this node.
        world_size (int): the number of workers in the group.
        rpc_backend_options (RpcBackendOptions, optional): timeouts, threads, init_method.
    """
    from .. import _mpi
    from .. import distributed_c10d as c10d
    from .._store import PrefixStore
    from ..autograd import _context as _ctx
    if _state._AGENT[0] is not None:
        raise RuntimeError("RPC is already initialized")
    if not isinstance(name, str) or not name:
        raise ValueError(f"init_rpc: name must be a non-empty string, got {name!r}")
    if backend is not None and backend != BackendType.TENSORPIPE:
        raise TypeError(f"init_rpc: backend must be BackendType.TENSORPIPE, got {backend!r}")
    opts = rpc_backend_options or TensorPipeRpcBackendOptions()
    if not isinstance(opts, RpcBackendOptions):
        raise TypeError(f"rpc_backend_options must be RpcBackendOptions, got "
                        f"{type(opts).__name__}")
    if not hasattr(opts, "num_worker_threads"):
        opts.num_worker_threads = 16
    # forming the world waits for the slowest worker to start: never less than a minute
    timeout = datetime.timedelta(seconds=max(opts.rpc_timeout, 60.0))
    ws = -1 if world_size is None else int(world_size)
    if c10d._S.default_pg is not None and c10d._S.store is not None:
        store = c10d._S.store
        rank = c10d.get_rank() if rank < 0 else rank
        ws = c10d.get_world_size() if ws < 0 else ws
    else:
        if _mpi.under_mpiexec():
            # MPI_Init is collective under mpiexec and holds the GIL: doing it after the
            # store would starve rank 0's store thread while the others wait on it
            _mpi.mpi()
        store, rank, ws = c10d._rendezvous(opts.init_method or "env://", rank, ws, timeout)
    if not 0 <= rank < ws:
        raise ValueError(f"init_rpc: rank {rank} is not in [0, world_size={ws})")
    _INITS[0] += 1
    prefix = f"ember/rpc{_INITS[0]}"
    comm = _mpi.form_world(PrefixStore(prefix + "/join", store), rank, ws,
                           timeout.total_seconds())
    names = comm.allgather(name)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        comm.Free()
        raise RuntimeError(f"init_rpc: worker names must be unique, but {dup} were used more "
                           f"than once (names: {names})")
    _ctx.set_worker_id(rank)
    agent = Agent(comm, rank, names, PrefixStore(prefix, store), opts,
                  reducers=((RRef, _reduce_rref),))
    agent.keep_store = store  # rank 0's TCPStore server lives as long as its object
    _state.set_agent(agent)
    agent.start()


def _barrier(store, key, n, timeout):
    store.add(key, 1)
    deadline = time.monotonic() + timeout
    while int(store.add(key, 0)) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"rpc.shutdown: timed out after {timeout} s waiting for the other "
                               f"workers to shut down")
        time.sleep(0.002)


def shutdown(graceful=True, timeout=DEFAULT_SHUTDOWN_TIMEOUT):
    """Performs a shutdown of the RPC agent, and then destroys the RPC agent.

    With ``graceful=True`` this blocks until every worker has called shutdown and all
    outstanding RPCs everywhere are answered; ``timeout`` (seconds, 0 meaning the RPC
    timeout) bounds that wait."""
    from ..autograd import _context as _ctx
    agent = _state.agent()
    wait = timeout if timeout and timeout > 0 else max(agent.options.rpc_timeout, 60.0)
    try:
        if graceful:
            agent.drain(wait)
            _barrier(agent.store, "shutdown", agent.world_size, wait)
            # rank 0 hosts the store: it stays until everyone has read the barrier
            agent.store.add("exited", 1)
            if agent.rank == 0:
                _barrier(agent.store, "exited", agent.world_size + 1, wait)
    finally:
        agent.stop()
        _state.set_agent(None)
        _ctx.clear_all()


def get_worker_info(worker_name=None):
    """Gets the WorkerInfo of a worker name (default: the current worker)."""
    agent = _state.agent()
    if worker_name is None:
        return agent.infos[agent.rank]
    return agent.worker(worker_name)


def _call(to, func, args, kwargs, timeout, kind="call", extra=None, label=None):
    if not callable(func):
        raise TypeError(f"rpc: func must be callable, got {type(func).__name__}")
    agent = _state.agent()
    dst = agent.worker(to).id
    return agent.call(dst, kind, func, args or (), kwargs or {}, timeout, extra=extra,
                      label=label)


def rpc_sync(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Makes a blocking RPC call to run function ``func`` on worker ``to`` and returns
    its result.

    Args:
        to (str or WorkerInfo or int): name/rank/WorkerInfo of the destination worker.
        func (Callable): a callable function, such as Python callables and builtin operators.
        args (tuple): the argument tuple for the ``func`` invocation.
        kwargs (dict): the keyword arguments for the ``func`` invocation.
        timeout (float): timeout in seconds; 0 means no timeout, the default the
            backend's ``rpc_timeout``.
    """
    return _call(to, func, args, kwargs, timeout, label="rpc_sync").wait()


def rpc_async(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Makes a non-blocking RPC call to run ``func`` on worker ``to``; returns a Future
    of its result (arguments as `rpc_sync`)."""
    return _call(to, func, args, kwargs, timeout, label="rpc_async")


def remote(to, func, args=None, kwargs=None, timeout=UNSET_RPC_TIMEOUT):
    """Makes a remote call to run ``func`` on worker ``to`` and returns an `RRef` to the
    result value immediately; the value stays on ``to``, which owns the RRef."""
    agent = _state.agent()
    owner = agent.worker(to).id
    rref_id = agent.new_id()
    fut = _call(owner, func, args, kwargs, timeout, kind="remote", extra=rref_id,
                label="rpc_remote")
    return RRef._make(owner, rref_id, created=fut, token=rref_id)

