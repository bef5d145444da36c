"""`ProcessGroup` and `Work`: the MPI engine under ember.distributed's collectives.

Every operation is a nonblocking MPI request polled against a deadline (the group's timeout),
so nothing waits forever.  With each collective the ranks exchange a small fingerprint
(sequence number, collective, element count) on a duplicate of the group's communicator, so
it never mixes with the data traffic.  The fingerprint travels beside the collective, not
before it: a launch never waits for the peers (DDP's buckets overlap with backward), and
the check happens when the operation is waited on or tested.  Ranks that called different
collectives (one skipped a call, or called another) get a clear error then, before any
result is written back, instead of silently mixed buffers.  When a deadline passes, every
waiting rank raises `DistBackendError` naming the collective, its sequence number and the
ranks that did not arrive; the ranks learn who is missing from a status key each slow waiter
leaves in the store.  After such an error the group is unusable (its MPI requests can not
be cancelled), as torch aborts a NCCL communicator.
"""
import datetime
import os
import time
import zlib

import numpy as np

from ._errors import DistBackendError
from ._mpi import mpi

__all__ = ["ProcessGroup", "Work"]

_OPCODES = {}


def _opcode(name):
    # a hash of the name, equal on every rank whatever order collectives were first used in
    return _OPCODES.setdefault(name, zlib.crc32(name.encode()) & 0x7FFFFFFF)


for _n in ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter_tensor", "reduce_scatter", "gather", "scatter", "all_to_all",
           "all_to_all_single", "barrier", "monitored_barrier", "all_gather_object",
           "gather_object", "broadcast_object_list", "scatter_object_list"):
    _opcode(_n)


def _check_enabled():
    v = os.environ.get("EMBER_DISTRIBUTED_CHECK", "1")
    return v not in ("0", "false", "False", "")


class Work:
    """A handle on an operation started with ``async_op=True``.

    `wait` blocks until it completes (raising `DistBackendError` past the group's timeout),
    `is_completed` tests without blocking, `get_future` gives an ``ember.futures.Future``
    whose value is the list of output tensors.
    """

    def __init__(self, pg, name, seq, reqs, finish=None, outputs=(), peer=None, fp=None):
        self._pg = pg
        self._name = name
        self._seq = seq
        self._reqs = list(reqs)
        self._fp = fp                  # the fingerprint exchange still to check, or None
        self._data_done = False
        self._finish = finish
        self._outputs = list(outputs)
        self._done = not self._reqs
        self._exc = None
        self._source = None
        self._peer = peer
        self._future = None
        self._start = time.monotonic()
        if self._done:
            self._complete()

    def _complete(self):
        self._done = True
        if self._finish is not None:
            f, self._finish = self._finish, None
            f(self)
        if self._future is not None and not self._future.done():
            self._future.set_result(self._outputs)

    def _fail(self, exc):
        self._exc = exc
        self._done = True
        if self._future is not None and not self._future.done():
            self._future.set_exception(exc)
        raise exc

    def is_completed(self):
        """True if the operation has completed (does not block)."""
        if self._done:
            return True
        MPI = mpi()
        if self._fp is not None:
            try:
                self._pg._test(self)
            except DistBackendError as e:
                self._fail(e)
            return self._done
        if self._name in ("recv", "irecv"):
            st = MPI.Status()
            if self._reqs[0].Test(st):
                self._source = st.Get_source()
                self._complete()
                return True
            return False
        if MPI.Request.Testall(self._reqs):
            self._complete()
            return True
        return False

    def is_success(self):
        return self._done and self._exc is None

    def exception(self):
        return self._exc

    def wait(self, timeout=None):
        """Blocks until the operation completes; raises `DistBackendError` past ``timeout``
        (default: the group's timeout, counted from when the operation started)."""
        if self._exc is not None:
            raise self._exc
        if self._done:
            return True
        secs = self._pg._timeout_s if timeout is None else (
            timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout))
        try:
            self._pg._poll(self, self._start + secs if timeout is None else
                           time.monotonic() + secs)
        except DistBackendError as e:
            self._fail(e)
        return True

    def synchronize(self):
        self.wait()

    def result(self):
        """The output tensors of the operation (after it completed)."""
        return self._outputs

    def source_rank(self):
        """The global rank a receive got its message from."""
        if not self._done:
            self.wait()
        if self._source is None:
            raise RuntimeError("source_rank() is only defined for receives")
        return self._pg._ranks[self._source]

    def get_future(self):
        """An ``ember.futures.Future`` completed with `result` when the operation is."""
        if self._future is None:
            from ..futures import Future
            self._future = Future(_waiter=self.wait)
            if self._done:
                if self._exc is not None:
                    self._future.set_exception(self._exc)
                else:
                    self._future.set_result(self._outputs)
        return self._future

    def __repr__(self):
        state = "completed" if self._done else "pending"
        return f"Work({self._name} #{self._seq}, {state})"


class ProcessGroup:
    """A group of processes that run collectives together, on one MPI communicator.

    Made by ``init_process_group`` (the default group) and ``new_group``; ``rank()`` and
    ``size()`` are this process's rank in the group and the group's size.
    """

    def __init__(self, comm, ranks, store, timeout, backend="gloo", name="", desc=""):
        self._comm = comm
        self._ranks = list(ranks)          # group rank -> global rank
        self._index = {g: i for i, g in enumerate(self._ranks)}
        self._store = store
        self._timeout = timeout
        self._timeout_s = timeout.total_seconds()
        self._backend = backend
        self._name = name
        self._desc = desc or name
        self._seq = 0
        self._broken = None
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        # fingerprints travel on their own communicator: mismatched data collectives
        # can then never swallow them (creating it is collective, like the group itself)
        self._fp_comm = comm.Dup() if self._size > 1 else None
        self.bound_device_id = None

    # ---- torch's ProcessGroup surface -------------------------------------------------
    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def name(self):
        return self._backend

    @property
    def group_name(self):
        return self._name

    @property
    def group_desc(self):
        return self._desc

    def _get_sequence_number_for_group(self):
        return self._seq

    def __repr__(self):
        return f"ProcessGroup(name={self._name!r}, backend={self._backend}, rank={self._rank}, " \
               f"size={self._size})"

    # ---- engine -----------------------------------------------------------------------
    def _next(self, name, count):
        """Starts collective ``name``: returns its sequence number and its fingerprint
        exchange (None when the check is off), which is launched here without waiting;
        `_test` checks it before the collective's results are used."""
        if self._broken is not None:
            raise DistBackendError(f"ember.distributed: process group {self._name!r} is unusable "
                                   f"after an earlier failure: {self._broken}")
        self._seq += 1
        seq = self._seq
        if self._size > 1 and self._fp_comm is not None and _check_enabled():
            MPI = mpi()
            mine = np.array([seq, _opcode(name), count], np.int64)
            allfp = np.empty((self._size, 3), np.int64)
            req = self._fp_comm.Iallgather([mine, MPI.INT64_T], [allfp, MPI.INT64_T])
            return seq, (req, mine, allfp)
        return seq, None

    def _check_fingerprints(self, work):
        _, mine, allfp = work._fp
        work._fp = None
        if (allfp == mine).all():
            return
        names = {v: k for k, v in _OPCODES.items()}
        _, _, count = (int(v) for v in mine)
        diff = [f"rank {self._ranks[r]}: {names.get(int(o), '?')} #{int(s)} "
                f"({int(c)} elements)" for r, (s, o, c) in enumerate(allfp)
                if (s, o, c) != tuple(mine)]
        err = DistBackendError(
            f"ember.distributed: collective mismatch at {work._name} (sequence number "
            f"{work._seq}, {count} elements) on rank {self._ranks[self._rank]}; other ranks "
            "called: " + "; ".join(diff) + ". Every rank of a group must call the same "
            "collectives in the same order.")
        self._broken = str(err)
        raise err

    def _test(self, work):
        """One nonblocking look at a collective with a fingerprint: checks the fingerprints
        once they arrived (raising on a mismatch), and completes ``work`` when its data has
        arrived too.  Results are written back only after the check passed."""
        MPI = mpi()
        if not work._data_done:
            try:
                work._data_done = MPI.Request.Testall(work._reqs)
            except MPI.Exception as e:
                # mismatched collectives can fail inside MPI (truncation): the fingerprints
                # say why, so wait for them before reporting the MPI error itself
                work._data_done = e
        if work._fp is not None and work._fp[0].Test():
            self._check_fingerprints(work)
        if work._fp is None and work._data_done:
            if isinstance(work._data_done, Exception):
                err = DistBackendError(f"ember.distributed: {work._name} (sequence number "
                                       f"{work._seq}) failed in MPI: {work._data_done}")
                self._broken = str(err)
                raise err
            work._complete()

    def _status_key(self, r):
        return f"status/{self._name}/{r}"

    def _poll(self, work, deadline):
        MPI = mpi()
        reqs = work._reqs
        need_status = work._name in ("recv", "irecv")
        st = MPI.Status() if need_status else None
        spins = 0
        reported = False
        slow_at = work._start + min(1.0, self._timeout_s / 4)
        while True:
            if work._fp is not None or work._data_done:
                self._test(work)
                done = False
                if work._done:
                    return
            elif need_status:
                done = reqs[0].Test(st)
            else:
                done = MPI.Request.Testall(reqs)
            if done:
                if need_status:
                    work._source = st.Get_source()
                work._complete()
                return
            spins += 1
            if spins & 63 == 0:
                now = time.monotonic()
                if now >= deadline:
                    self._timed_out(work, now)
                if not reported and now >= slow_at:
                    reported = True
                    self._report_status(work)
                if now - work._start > 0.2:
                    time.sleep(0.0005)
                else:
                    os.sched_yield()

    def _report_status(self, work):
        if self._store is None:
            return
        try:
            self._store.set(self._status_key(self._rank), f"{work._seq} {work._name}")
        except Exception:  # noqa: BLE001 - the store may be gone with a dead rank
            pass

    def _timed_out(self, work, now):
        self._report_status(work)
        waited = now - work._start
        if work._peer is not None:
            missing = [work._peer]
            detail = ""
        else:
            missing, detail = self._missing_ranks(work)
        who = ", ".join(str(r) for r in missing) if missing else "unknown"
        err = DistBackendError(
            f"ember.distributed: {work._name} (sequence number {work._seq}) on process group "
            f"{self._name!r} timed out after {waited:.1f}s on rank {self._ranks[self._rank]}: "
            f"rank(s) [{who}] did not arrive{detail}. A rank died, hangs, or skipped this "
            f"collective; raise the group's timeout if it is only slow.")
        self._broken = str(err)
        raise err

    def _missing_ranks(self, work):
        if self._store is None:
            return [], ""
        time.sleep(min(0.2, self._timeout_s / 20))  # let the other waiters post their status
        missing, seen = [], []
        try:
            for r in range(self._size):
                if r == self._rank:
                    continue
                key = self._status_key(r)
                val = self._store.get(key).decode() if self._store.check([key]) else None
                seq, _, name = (val or "0 ").partition(" ")
                if val is None or int(seq) < work._seq or (int(seq) == work._seq and
                                                             name != work._name):
                    missing.append(self._ranks[r])
                    if val is not None:
                        seen.append(f"rank {self._ranks[r]} last waited in {name} #{seq}")
        except Exception as e:  # noqa: BLE001 - report what we can
            return missing, f" (could not read the other ranks' status from the store: {e})"
        return missing, (" (" + "; ".join(seen) + ")") if seen else ""

    def _global(self, group_rank):
        return self._ranks[group_rank]

    def _group_rank(self, global_rank):
        try:
            return self._index[global_rank]
        except KeyError:
            raise ValueError(f"global rank {global_rank} is not part of process group "
                             f"{self._name!r} (ranks {self._ranks})") from None
