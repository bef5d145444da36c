"""The RPC agent: MPI point-to-point transport, its progress thread and the serving pool.

One progress thread makes every MPI call of the agent (sends, probes, receives), so the
transport needs no lock around MPI; the process may still use collectives from its own
threads at the same time, which is why the MPI library must grant MPI_THREAD_MULTIPLE.
Incoming requests run on a pool of ``num_worker_threads`` threads; replies and the
agent's own requests are queued to the progress thread, which wakes at once for sends
and polls for receives with a short back-off.

A message is a frame from `_wire.dumps` of ``(kind, msg_id, meta, inner)`` where ``inner``
is itself a frame (function and arguments, or a result; carried out of band, uncopied):
the outer layer holds plain data only, so a request whose inner part is refused can still
be answered with the error.
"""
import collections
import concurrent.futures
import itertools
import pickle
import threading
import time
import traceback

import numpy as np

from ...futures import Future
from .. import _mpi
from ..autograd import _context as _ctx
from . import _wire

_TAG = 7301


class WorkerInfo:
    """A structure that encapsulates information of a worker in the system: its ``name``
    and its ``id`` (the rank)."""
    __slots__ = ("name", "id")

    def __init__(self, name, id):  # noqa: A002 - torch's name
        self.name = name
        self.id = id

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self):
        return hash((self.name, self.id))

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)


class _Pending:
    __slots__ = ("future", "deadline", "timeout", "on_reply", "prof")

    def __init__(self, future, deadline, timeout, on_reply, prof=None):
        self.future, self.deadline, self.timeout = future, deadline, timeout
        self.on_reply = on_reply
        self.prof = prof      # (recorder, open range, peer) while the caller profiles


def _profiled_call(agent, dst, fn, label):
    """Opens the caller's range for a call made while a profiler runs: named as torch
    names it (``rpc_sync#fn(worker0 -> worker1)``), not a parent of later local ops."""
    from ...autograd import profiler as _prof
    rec = _prof._active_recorder()
    if rec is None or not rec.recording:
        return None
    name = (f"{label}#{getattr(fn, '__qualname__', type(fn).__name__)}"
            f"({agent.infos[agent.rank].name} -> {agent.infos[dst].name})")
    o = rec.begin(name)
    rec.end(o)
    o.end = o.start
    return rec, o, dst


def _close_profiled(prof, records):
    from ...autograd import profiler as _prof
    rec, o, dst = prof
    if not rec.recording:
        return
    o.end = _prof._now_us() - rec.t0
    if records:
        renamed = []
        for d in records:
            d = dict(d)
            d["name"] = f"{o.name}#remote_op: {d['name']}"
            renamed.append(d)
        rec.add_remote_events(renamed, dst, parent=o)


def _run_profiled(fn, args, kwargs):
    """Runs a call with its own recorder on this serving thread (the mode stack is
    thread-local, so the worker's other threads and its own profiler are unaffected)."""
    from ...autograd import profiler as _prof
    rec = _prof._Recorder(False, False, False, False)
    mode = _prof._ProfilerMode(rec)
    mode.__enter__()
    try:
        out = fn(*args, **kwargs)
    finally:
        mode.__exit__(None, None, None)
        events = rec.finish()
    return out, [e.to_dict() for e in events]


class Agent:
    def __init__(self, comm, rank, names, store, options, reducers):
        MPI = _mpi.mpi()
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            raise RuntimeError(
                f"ember.distributed.rpc needs an MPI library initialised with "
                f"MPI_THREAD_MULTIPLE (its progress thread runs beside the program's own MPI "
                f"calls), but this one provides thread level {MPI.Query_thread()}; use the "
                f"mpich wheel of ember's 'distributed' extra")
        self.MPI = MPI
        self.comm = comm
        self.rank = rank
        self.world_size = len(names)
        self.infos = [WorkerInfo(n, i) for i, n in enumerate(names)]
        self.by_name = {w.name: w for w in self.infos}
        self.store = store
        self.options = options
        self.reducers = reducers
        self.ids = itertools.count(1)
        self.owned = {}
        self.owned_lock = threading.RLock()   # RRef.__del__ may run inside a locked region
        self.forks = {}          # rref id -> tokens of the RRef objects that hold it
        self.tombstones = {}     # rref id -> tokens released before their holder was known
        self.release_when_done = set()
        self.released = set()
        self.pending = {}
        self.lock = threading.Lock()
        self.outq = collections.deque()
        self.inbox = collections.deque()
        self.wake = threading.Event()
        self.running = True
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, int(options.num_worker_threads)),
            thread_name_prefix=f"ember-rpc-{rank}")
        self.thread = threading.Thread(target=self._progress, name=f"ember-rpc-progress-{rank}",
                                       daemon=True)
        self.error = None

    def start(self):
        """Serve and send: called once the agent is the process's (`_state`), since a request
        from a faster worker may arrive at once and run code that asks for it."""
        self.thread.start()

    # ---- ids and owned values ------------------------------------------------------
    def new_id(self):
        return (self.rank, next(self.ids))

    def owned_future(self, rref_id):
        with self.owned_lock:
            fut = self.owned.get(rref_id)
            if fut is None:
                if rref_id in self.released:
                    raise RuntimeError(f"RRef {rref_id} was deleted on its owner: no worker "
                                       "holds a reference to it any more")
                fut = self.owned[rref_id] = Future()
            return fut

    # ---- reference counting (on the owner) ----------------------------------------------
    # Every RRef object anywhere holds one token, registered here by whoever made it: the
    # owner itself, the caller of `remote` (the request carries it), or the sender of a
    # message carrying the RRef (before the message leaves, so the sender's own release,
    # sent later on the same channel, cannot arrive first).  A release may overtake its
    # registration when they come from different workers: it waits as a tombstone.  The
    # value goes when no token is left.
    def rref_add(self, rref_id, token):
        with self.owned_lock:
            tomb = self.tombstones.get(rref_id)
            if tomb is not None and token in tomb:
                tomb.discard(token)
                if not tomb:
                    del self.tombstones[rref_id]
                self._maybe_release(rref_id)
                return
            self.forks.setdefault(rref_id, set()).add(token)

    def rref_del(self, rref_id, token):
        with self.owned_lock:
            live = self.forks.get(rref_id)
            if live is not None and token in live:
                live.discard(token)
                self._maybe_release(rref_id)
            else:
                self.tombstones.setdefault(rref_id, set()).add(token)

    def _maybe_release(self, rref_id):
        if self.forks.get(rref_id) or self.tombstones.get(rref_id):
            return
        self.forks.pop(rref_id, None)
        fut = self.owned.get(rref_id)
        if fut is None:
            return
        if fut.done():
            del self.owned[rref_id]
            self.released.add(rref_id)
        else:
            self.release_when_done.add(rref_id)

    def _created(self, rref_id):
        with self.owned_lock:
            if rref_id in self.release_when_done:
                self.release_when_done.discard(rref_id)
                self.owned.pop(rref_id, None)
                self.released.add(rref_id)

    def post_refcount(self, kind, owner, rref_id, token):
        """Registers (``"radd"``) or releases (``"rdel"``) a token with ``owner``."""
        if owner == self.rank:
            (self.rref_add if kind == "radd" else self.rref_del)(rref_id, token)
            return
        if not self.running:
            return
        frame, _ = _wire.dumps((kind, None, (tuple(rref_id), tuple(token)), None))
        self._post(owner, frame)

    def worker(self, to):
        if isinstance(to, WorkerInfo):
            return to
        if isinstance(to, str):
            w = self.by_name.get(to)
            if w is None:
                raise RuntimeError(f"Unknown destination worker {to}")
            return w
        if isinstance(to, int) and not isinstance(to, bool):
            if not 0 <= to < self.world_size:
                raise RuntimeError(f"Unknown destination worker id {to} (world_size "
                                   f"{self.world_size})")
            return self.infos[to]
        raise TypeError(f"rpc destination must be a worker name, id or WorkerInfo, got "
                        f"{type(to).__name__}")

    # ---- sending ---------------------------------------------------------------------
    def _post(self, dst, frame):
        if dst == self.rank:
            self.inbox.append(frame)
        else:
            self.outq.append((dst, frame))
        self.wake.set()

    def call(self, dst, kind, fn, args, kwargs, timeout, extra=None, track=True, label=None):
        """Send a request; return a Future of the decoded result."""
        if not self.running:
            raise RuntimeError("RPC has not been initialized or has been shut down; call "
                               "ember.distributed.rpc.init_rpc first")
        ctx = _ctx.current() if track else None
        send_id = self.new_id()
        inner, tracked = _wire.dumps((fn, tuple(args), dict(kwargs)), self.reducers,
                                     track=ctx is not None)
        if ctx is not None:
            ctx.peers.add(dst)
            if tracked:
                with ctx.lock:
                    ctx.sends[send_id] = tracked
        msg_id = self.new_id()
        fut = Future()
        if timeout is None or timeout < 0:
            timeout = self.options.rpc_timeout
        deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
        prof = _profiled_call(self, dst, fn, label) if label else None
        with self.lock:
            self.pending[msg_id] = _Pending(fut, deadline, timeout, ctx, prof)
        meta = (self.rank, ctx.id if ctx is not None else None, send_id, extra,
                prof is not None)
        frame, _ = _wire.dumps((kind, msg_id, meta, pickle.PickleBuffer(inner)))
        self._post(dst, frame)
        return fut

    # ---- progress thread ----------------------------------------------------------------
    def _progress(self):
        MPI, comm = self.MPI, self.comm
        inflight = []
        status = MPI.Status()
        nap = 2e-5
        next_check = last_busy = 0.0
        try:
            while True:
                busy = False
                while self.outq:
                    dst, frame = self.outq.popleft()
                    inflight.append((comm.Isend([frame, MPI.BYTE], dest=dst, tag=_TAG), frame))
                    busy = True
                if inflight:
                    inflight = [(r, f) for r, f in inflight if not r.Test()]
                while self.inbox:
                    self._incoming(self.inbox.popleft())
                    busy = True
                while comm.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG, status=status):
                    buf = np.empty(status.Get_count(MPI.BYTE), np.uint8)
                    comm.Recv([buf, MPI.BYTE], source=status.Get_source(), tag=_TAG)
                    self._incoming(buf)
                    busy = True
                now = time.monotonic()
                if now >= next_check:
                    self._expire(now)
                    next_check = now + 0.01
                if not self.running and not self.outq and not inflight and not self.inbox:
                    return
                if busy:
                    nap, last_busy = 2e-5, now
                else:
                    self.wake.wait(nap)
                    self.wake.clear()
                    # stay quick while replies are awaited, sends are in flight (a large one
                    # moves only as MPI is progressed) or traffic is recent, and back
                    # off to 1 ms polls when idle (2 cores may be shared with the program)
                    hot = self.pending or inflight or now - last_busy < 0.05
                    nap = min(nap * 2, 1e-4 if hot else 1e-3)
        except BaseException as e:  # noqa: BLE001 - every waiter must learn the transport died
            self.error = e
            with self.lock:
                pend, self.pending = self.pending, {}
            for p in pend.values():
                p.future.set_exception(RuntimeError(f"RPC transport failed: {e!r}"))

    def _expire(self, now):
        with self.lock:
            late = [k for k, p in self.pending.items() if p.deadline is not None and
                    now > p.deadline]
            gone = [self.pending.pop(k) for k in late]
        for p in gone:
            if p.prof is not None:
                _close_profiled(p.prof, None)
            p.future.set_exception(RuntimeError(
                f"RPC ran for more than set timeout ({int(p.timeout * 1000)} ms) and will now "
                f"be marked with an error"))

    def _incoming(self, frame):
        (kind, msg_id, meta, inner), _ = _wire.loads(frame)
        if kind in ("radd", "rdel"):
            rref_id, token = meta
            (self.rref_add if kind == "radd" else self.rref_del)(tuple(rref_id), tuple(token))
            return
        if kind == "rep":
            with self.lock:
                p = self.pending.pop(msg_id, None)
            if p is not None:
                self.pool.submit(self._resolve, p, meta, inner)
            return
        if kind == "remote":
            # the caller's RRef object holds the token named after the value
            self.owned_future(meta[3])
            self.rref_add(meta[3], meta[3])
        self.pool.submit(self._serve, kind, msg_id, meta, inner)

    def _resolve(self, p, meta, inner):
        ok, send_id, dst, records = meta
        if p.prof is not None:
            _close_profiled(p.prof, records)
        try:
            value, received = _wire.loads(inner)
        except BaseException as e:  # noqa: BLE001
            p.future.set_exception(e)
            return
        if ok:
            if received and p.on_reply is not None:
                with p.on_reply.lock:
                    p.on_reply.recvs[(dst, send_id)] = [t for _, t in sorted(received,
                                                                              key=lambda x: x[0])]
            p.future.set_result(value)
        else:
            p.future.set_exception(_rebuild_error(value))

    # ---- serving -------------------------------------------------------------------------
    def _serve(self, kind, msg_id, meta, inner):
        src, ctx_id, send_id, extra, profiled = meta
        ctx = _ctx.get_or_create(ctx_id) if ctx_id is not None else None
        prev = _ctx.set_current(ctx)
        records = None
        try:
            fn, args, kwargs = None, (), {}
            (fn, args, kwargs), received = _wire.loads(inner)
            if ctx is not None:
                ctx.peers.add(src)
                if received:
                    with ctx.lock:
                        ctx.recvs[(src, send_id)] = [t for _, t in sorted(received,
                                                                          key=lambda x: x[0])]
            if profiled:
                out, records = _run_profiled(fn, args, kwargs)
            else:
                out = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - the caller gets it
            self._fail(kind, msg_id, src, extra, e)
            return
        finally:
            _ctx.set_current(prev)
        if getattr(fn, "_ember_async_execution", False) and isinstance(out, Future):
            out.add_done_callback(lambda f: self._finish(kind, msg_id, src, extra, ctx, f,
                                                         records))
            return
        self._reply(kind, msg_id, src, extra, ctx, out, records)

    def _finish(self, kind, msg_id, src, extra, ctx, fut, records=None):
        try:
            out = fut.value()
        except BaseException as e:  # noqa: BLE001
            self._fail(kind, msg_id, src, extra, e)
            return
        self._reply(kind, msg_id, src, extra, ctx, out, records)

    def _reply(self, kind, msg_id, src, extra, ctx, out, records=None):
        if kind == "remote":
            self.owned_future(extra).set_result(out)
            self._created(extra)
            out = None
        send_id = self.new_id()
        try:
            inner, tracked = _wire.dumps(out, self.reducers, track=ctx is not None)
        except BaseException as e:  # noqa: BLE001
            self._fail(kind, msg_id, src, extra, e)
            return
        if tracked:
            with ctx.lock:
                ctx.sends[send_id] = tracked
        frame, _ = _wire.dumps(("rep", msg_id, (True, send_id, self.rank, records),
                                pickle.PickleBuffer(inner)))
        self._post(src, frame)

    def _fail(self, kind, msg_id, src, extra, exc):
        if kind == "remote":
            fut = self.owned_future(extra)
            if not fut.done():
                fut.set_exception(exc)
            self._created(extra)
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        msg = (f"{exc}\n\nOn WorkerInfo(id={self.rank}, name={self.infos[self.rank].name}):\n"
               f"{text}")
        cls = type(exc)
        try:
            inner, _ = _wire.dumps((cls, msg))
            _wire.check_global(cls.__module__, cls.__qualname__)
        except BaseException:  # noqa: BLE001 - an unsendable type travels as RuntimeError
            inner, _ = _wire.dumps((RuntimeError, msg))
        frame, _ = _wire.dumps(("rep", msg_id, (False, None, self.rank, None),
                                pickle.PickleBuffer(inner)))
        self._post(src, frame)

    # ---- shutdown ------------------------------------------------------------------------
    def drain(self, timeout):
        """Wait until every request this worker sent has been answered."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                futs = [p.future for p in self.pending.values()]
            if not futs:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"rpc.shutdown: {len(futs)} RPC(s) still outstanding after "
                                   f"{timeout} s")
            time.sleep(0.002)

    def stop(self):
        self.running = False
        self.wake.set()
        self.thread.join()
        self.pool.shutdown(wait=True)
        try:
            self.comm.Free()
        except Exception:  # noqa: BLE001 - freeing a communicator at exit is best effort
            pass


def _rebuild_error(value):
    try:
        cls, msg = value
        if isinstance(cls, type) and issubclass(cls, BaseException):
            try:
                return cls(msg)
            except Exception:  # noqa: BLE001 - a constructor with other arguments
                return RuntimeError(msg)
    except (TypeError, ValueError):
        pass
    return RuntimeError(str(value))

