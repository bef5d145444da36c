"""Collectives and point-to-point operations on tensors (torch.distributed's functions).

Every function works in place on the tensors' memory: a contiguous tensor's NumPy array is
handed to MPI as it is (zero copy); a non-contiguous one goes through a contiguous copy that
is written back.  Data movement (broadcast, gathers, scatters, all-to-all, send/recv) moves
raw bytes, so every dtype works, bfloat16/float16/bool/complex included; reductions use MPI's
arithmetic, with float16/bfloat16 accumulated in float32.  ``async_op=True`` returns a
`Work`; otherwise the call returns when the operation completed (or raises
`DistBackendError` past the group's timeout).
"""
import numpy as np

from .._core.tensor import Tensor, wrap
from ._mpi import mpi, reduce_type
from ._process_group import Work
from ._reduce_op import ReduceOp, _RedOpType, as_red_op, premul_factor
from .distributed_c10d import _resolve

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "_all_gather_base", "reduce_scatter_tensor", "_reduce_scatter_base", "gather",
           "scatter", "all_to_all", "all_to_all_single", "reduce_scatter", "barrier",
           "monitored_barrier", "send", "recv", "isend", "irecv", "P2POp", "batch_isend_irecv",
           "all_reduce_coalesced", "all_gather_coalesced"]


def _check_tensor(t, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")
    return t


def _bump(t):
    v = t._vc
    if v is not None:
        v[0] += 1


def _contig(t):
    """(contiguous array over t's memory, write-back or None)."""
    a = t._data
    if a.flags.c_contiguous:
        return a, None
    tmp = np.ascontiguousarray(a)
    return tmp, (lambda: np.copyto(t._data, tmp))


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


def _mpi_op(op, dtype, name):
    MPI = mpi()
    op = as_red_op(op)
    kind = np.dtype(dtype).kind
    if op == _RedOpType.PREMUL_SUM:
        if kind not in "fcV":
            raise TypeError(f"{name}: ReduceOp.PREMUL_SUM needs a floating or complex tensor, "
                            f"got dtype {dtype}")
        return MPI.SUM
    if kind == "b":
        if op == _RedOpType.AVG:
            raise TypeError(f"{name}: ReduceOp.AVG is not defined for bool tensors")
        return {_RedOpType.SUM: MPI.MAX, _RedOpType.MAX: MPI.MAX, _RedOpType.BOR: MPI.BOR,
                _RedOpType.PRODUCT: MPI.MIN, _RedOpType.MIN: MPI.MIN, _RedOpType.BAND: MPI.BAND,
                _RedOpType.BXOR: MPI.BXOR}[op]
    if kind == "c" and op in (_RedOpType.MIN, _RedOpType.MAX):
        raise TypeError(f"{name}: ReduceOp.{op.name} is not defined for complex tensors "
                        f"(dtype {dtype})")
    if kind not in "iu" and op in (_RedOpType.BAND, _RedOpType.BOR, _RedOpType.BXOR):
        raise TypeError(f"{name}: ReduceOp.{op.name} needs an integer or bool tensor, got "
                        f"dtype {dtype}")
    return {_RedOpType.SUM: MPI.SUM, _RedOpType.AVG: MPI.SUM, _RedOpType.PRODUCT: MPI.PROD,
            _RedOpType.MIN: MPI.MIN, _RedOpType.MAX: MPI.MAX, _RedOpType.BAND: MPI.BAND,
            _RedOpType.BOR: MPI.BOR, _RedOpType.BXOR: MPI.BXOR}[op]


class _RedBuf:
    """A reduction buffer over tensor ``t``: ``arr`` in the dtype MPI computes in."""

    def __init__(self, t, op, n_avg, name, copy=False):
        self.t = t
        src = t._data
        self.mpitype, cdt = reduce_type(src.dtype)
        self.op = _mpi_op(op, src.dtype, name)
        self.avg = as_red_op(op) == _RedOpType.AVG and n_avg
        if as_red_op(op) == _RedOpType.PREMUL_SUM:
            # scaled in a copy: reduce's non-root ranks and reduce_scatter's input keep
            # their values, as with the other ops
            self.arr = np.array(src, dtype=cdt, order="C", copy=True)
            self.arr *= np.asarray(premul_factor(op, name)).astype(cdt)
            self.cast = True
        elif cdt != src.dtype:
            self.arr = np.ascontiguousarray(src, dtype=cdt)
            self.cast = True
        elif copy or not src.flags.c_contiguous:
            self.arr = np.array(src, order="C", copy=True)
            self.cast = True
        else:
            self.arr = src
            self.cast = False
        if src.dtype == np.bool_:
            self.arr = self.arr.view(np.uint8)

    def spec(self, arr=None):
        a = self.arr if arr is None else arr
        return [a, a.size, self.mpitype]

    def finish(self, out=None, arr=None):
        """Writes the reduced values (``arr``, default the whole buffer) into ``out``."""
        out = self.t if out is None else out
        a = self.arr if arr is None else arr
        if self.avg:
            _divide(a, self.avg)
        if out.dtype.np == np.bool_:
            a = a.view(np.bool_)
        if a is not out._data:
            np.copyto(out._data, a.reshape(out.shape), casting="unsafe")
        _bump(out)


def _divide(a, n):
    if a.dtype.kind in "iu":
        np.floor_divide(a, n, out=a)
    else:
        np.divide(a, n, out=a)


def _run(pg, name, count, start, outputs=(), async_op=False, finish=None):
    seq, fp = pg._next(name, count)
    reqs = start()
    work = Work(pg, name, seq, reqs if isinstance(reqs, list) else [reqs], finish, outputs,
                fp=fp)
    if async_op:
        return work
    work.wait()
    return None


def _src_rank(pg, src, group_src, what="src"):
    if group_src is not None:
        if src is not None:
            raise ValueError(f"Can not specify both {what} and group_{what}")
        return group_src
    if src is None:
        src = 0
    return pg._group_rank(src)


# ---- reductions ------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces the tensor data across all machines so that all get the final result, in
    place."""
    _check_tensor(tensor, "all_reduce")
    pg = _resolve(group)
    if pg is None:
        return None
    b = _RedBuf(tensor, op, pg.size(), "all_reduce")
    if pg.size() == 1:
        b.finish()
        return Work(pg, "all_reduce", pg._seq, [], outputs=[tensor]) if async_op else None
    MPI = mpi()
    return _run(pg, "all_reduce", b.arr.size,
                lambda: pg._comm.Iallreduce(MPI.IN_PLACE, b.spec(), b.op), [tensor], async_op,
                lambda w: b.finish() if b.cast or b.avg else _bump(tensor))


def all_reduce_coalesced(tensors, op=ReduceOp.SUM, group=None, async_op=False):
    """All-reduces each tensor of ``tensors`` (one MPI call per dtype would batch them; ember
    issues one per tensor)."""
    works = [all_reduce(t, op, group, async_op=True) for t in tensors]
    if async_op:
        return _Multi(works, list(tensors))
    for w in works:
        if w is not None:
            w.wait()
    return None


class _Multi(Work):
    def __init__(self, works, outputs):
        self._works = [w for w in works if w is not None]
        pg = self._works[0]._pg if self._works else None
        super().__init__(pg, "coalesced", 0, [], outputs=outputs)
        self._done = False

    def is_completed(self):
        return all(w.is_completed() for w in self._works)

    def wait(self, timeout=None):
        for w in self._works:
            w.wait(timeout)
        self._done = True
        if self._future is not None and not self._future.done():
            self._future.set_result(self._outputs)
        return True


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces the tensor data across all machines; only rank ``dst`` gets the result."""
    _check_tensor(tensor, "reduce")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _src_rank(pg, dst, group_dst, "dst")
    b = _RedBuf(tensor, op, pg.size(), "reduce")
    MPI = mpi()
    me = pg.rank() == root
    if pg.size() == 1:
        b.finish()
        return None

    def start():
        if me:
            return pg._comm.Ireduce(MPI.IN_PLACE, b.spec(), b.op, root=root)
        return pg._comm.Ireduce(b.spec(), None, b.op, root=root)
    return _run(pg, "reduce", b.arr.size, start, [tensor], async_op,
                lambda w: (b.finish() if (b.cast or b.avg) else _bump(tensor)) if me else None)


def _check_world_sized(name, n, big, small):
    """``big`` must hold world_size (``n``) times ``small``'s elements, of the same dtype."""
    (big_name, b), (small_name, t) = big, small
    if b.numel() != t.numel() * n:
        raise ValueError(f"{name}: {big_name} has {b.numel()} elements, expected world_size "
                         f"({n}) x {small_name}'s {t.numel()}")
    if b.dtype != t.dtype:
        raise TypeError(f"{name}: {big_name} dtype {b.dtype} differs from {small_name} dtype "
                        f"{t.dtype}")


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` (``world_size`` times ``output``'s size, concatenated along dim 0 or
    stacked) and scatters the blocks: rank i gets block i in ``output``."""
    _check_tensor(output, "reduce_scatter_tensor")
    _check_tensor(input, "reduce_scatter_tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()
    _check_world_sized("reduce_scatter_tensor", n, ("input", input), ("output", output))
    bi = _RedBuf(input, op, n, "reduce_scatter_tensor")
    res = np.empty(output.numel(), bi.arr.dtype)
    return _run(pg, "reduce_scatter_tensor", bi.arr.size,
                lambda: pg._comm.Ireduce_scatter_block([bi.arr, bi.mpitype], [res, res.size, bi.mpitype],
                                                       bi.op),
                [output], async_op, lambda w: bi.finish(output, res))


_reduce_scatter_base = reduce_scatter_tensor


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces, then scatters a list of tensors: rank i gets the reduction of every rank's
    ``input_list[i]`` in ``output``."""
    pg = _resolve(group)
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, expected "
                         f"the group's size {pg.size()}")
    flat = wrap(np.concatenate([np.ascontiguousarray(t._data).reshape(-1)
                                for t in input_list]))
    bi = _RedBuf(flat, op, pg.size(), "reduce_scatter")
    counts = [t.numel() for t in input_list]
    res = np.empty(counts[pg.rank()], bi.arr.dtype)
    return _run(pg, "reduce_scatter", bi.arr.size,
                lambda: pg._comm.Ireduce_scatter([bi.arr, bi.mpitype], [res, res.size, bi.mpitype],
                                                 counts, bi.op),
                [output], async_op, lambda w: bi.finish(output, res))


# ---- data movement ---------------------------------------------------------------------
def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Broadcasts ``tensor`` from rank ``src`` to every rank of the group, in place."""
    _check_tensor(tensor, "broadcast")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _src_rank(pg, src, group_src)
    a, back = _contig(tensor)
    if pg.size() == 1:
        return None
    MPI = mpi()

    def finish(w):
        if pg.rank() != root:
            if back:
                back()
            _bump(tensor)
    return _run(pg, "broadcast", a.size,
                lambda: pg._comm.Ibcast([_bytes(a), MPI.BYTE], root=root), [tensor], async_op,
                finish)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers ``input_tensor`` from every rank into ``output_tensor`` (their concatenation
    along dim 0, or their stack)."""
    _check_tensor(output_tensor, "all_gather_into_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()
    _check_world_sized("all_gather_into_tensor", n, ("output", output_tensor),
                       ("input", input_tensor))
    src = np.ascontiguousarray(input_tensor._data)
    out, back = _contig(output_tensor)
    MPI = mpi()

    def finish(w):
        if back:
            back()
        _bump(output_tensor)
    return _run(pg, "all_gather_into_tensor", src.size,
                lambda: pg._comm.Iallgather([_bytes(src), MPI.BYTE], [_bytes(out), MPI.BYTE]),
                [output_tensor], async_op, finish)


_all_gather_base = all_gather_into_tensor


def _offsets(counts):
    displ, acc = [], 0
    for c in counts:
        displ.append(acc)
        acc += c
    return displ, acc


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gathers ``tensor`` from every rank into ``tensor_list`` (one tensor per rank)."""
    _check_tensor(tensor, "all_gather")
    pg = _resolve(group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, expected "
                         f"the group's size {pg.size()}")
    for t in tensor_list:
        if t.dtype != tensor.dtype:
            raise TypeError(f"all_gather: tensor_list holds dtype {t.dtype}, input is "
                            f"{tensor.dtype}")
    src = _bytes(np.ascontiguousarray(tensor._data))
    counts = [t._data.nbytes for t in tensor_list]
    displ, total = _offsets(counts)
    buf = np.empty(total, np.uint8)
    MPI = mpi()

    def finish(w):
        for t, d, c in zip(tensor_list, displ, counts):
            t._data[...] = buf[d:d + c].view(t.dtype.np).reshape(t.shape)
            _bump(t)
    return _run(pg, "all_gather", tensor.numel(),
                lambda: pg._comm.Iallgatherv([src, MPI.BYTE], [buf, (counts, displ), MPI.BYTE]),
                list(tensor_list), async_op, finish)


def all_gather_coalesced(output_tensor_lists, input_tensor_list, group=None, async_op=False):
    works = [all_gather(o, i, group, async_op=True)
             for o, i in zip(output_tensor_lists, input_tensor_list)]
    if async_op:
        return _Multi(works, list(output_tensor_lists))
    for w in works:
        if w is not None:
            w.wait()
    return None


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Gathers ``tensor`` from every rank into ``gather_list`` on rank ``dst``."""
    _check_tensor(tensor, "gather")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _src_rank(pg, dst, group_dst, "dst")
    me = pg.rank() == root
    if me:
        if gather_list is None or len(gather_list) != pg.size():
            raise ValueError(f"gather: on the destination rank gather_list must hold "
                             f"{pg.size()} tensors")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    src = _bytes(np.ascontiguousarray(tensor._data))
    MPI = mpi()
    counts = displ = buf = None
    if me:
        counts = [t._data.nbytes for t in gather_list]
        displ, total = _offsets(counts)
        buf = np.empty(total, np.uint8)

    def start():
        recv = [buf, (counts, displ), MPI.BYTE] if me else None
        return pg._comm.Igatherv([src, MPI.BYTE], recv, root=root)

    def finish(w):
        if me:
            for t, d, c in zip(gather_list, displ, counts):
                t._data[...] = buf[d:d + c].view(t.dtype.np).reshape(t.shape)
                _bump(t)
    return _run(pg, "gather", tensor.numel(), start, list(gather_list or []), async_op, finish)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Scatters ``scatter_list`` (on rank ``src``): rank i receives ``scatter_list[i]`` into
    ``tensor``."""
    _check_tensor(tensor, "scatter")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _src_rank(pg, src, group_src)
    me = pg.rank() == root
    if me:
        if scatter_list is None or len(scatter_list) != pg.size():
            raise ValueError(f"scatter: on the source rank scatter_list must hold "
                             f"{pg.size()} tensors")
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    out, back = _contig(tensor)
    MPI = mpi()
    send = None
    if me:
        parts = [_bytes(np.ascontiguousarray(t._data)) for t in scatter_list]
        counts = [p.size for p in parts]
        displ, _ = _offsets(counts)
        send = [np.concatenate(parts) if parts else np.empty(0, np.uint8), (counts, displ),
                MPI.BYTE]

    def finish(w):
        if back:
            back()
        _bump(tensor)
    return _run(pg, "scatter", tensor.numel(),
                lambda: pg._comm.Iscatterv(send, [_bytes(out), MPI.BYTE], root=root),
                [tensor], async_op, finish)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Each rank scatters ``input_tensor_list`` and gathers into ``output_tensor_list``:
    rank j's ``input_tensor_list[i]`` lands in rank i's ``output_tensor_list[j]``."""
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()
    if len(input_tensor_list) != n or len(output_tensor_list) != n:
        raise ValueError(f"all_to_all: both lists must hold the group's size {n} tensors")
    parts = [_bytes(np.ascontiguousarray(t._data)) for t in input_tensor_list]
    scounts = [p.size for p in parts]
    sdispl, _ = _offsets(scounts)
    sbuf = np.concatenate(parts) if parts else np.empty(0, np.uint8)
    rcounts = [t._data.nbytes for t in output_tensor_list]
    rdispl, total = _offsets(rcounts)
    rbuf = np.empty(total, np.uint8)
    MPI = mpi()

    def finish(w):
        for t, d, c in zip(output_tensor_list, rdispl, rcounts):
            t._data[...] = rbuf[d:d + c].view(t.dtype.np).reshape(t.shape)
            _bump(t)
    return _run(pg, "all_to_all", 0,
                lambda: pg._comm.Ialltoallv([sbuf, (scounts, sdispl), MPI.BYTE],
                                            [rbuf, (rcounts, rdispl), MPI.BYTE]),
                list(output_tensor_list), async_op, finish)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Splits ``input`` along dim 0 (evenly, or by ``input_split_sizes``), sends piece i to
    rank i, and concatenates what it receives into ``output`` (by ``output_split_sizes``)."""
    _check_tensor(output, "all_to_all_single")
    _check_tensor(input, "all_to_all_single")
    pg = _resolve(group)
    if pg is None:
        return None
    n = pg.size()
    if input.dtype != output.dtype:
        raise TypeError(f"all_to_all_single: input dtype {input.dtype} differs from output "
                        f"dtype {output.dtype}")

    def counts(t, splits, what):
        rows = t.shape[0] if t.dim() else 1
        row = t._data.nbytes // rows if rows else 0
        if splits is None or len(splits) == 0:
            if rows % n:
                raise ValueError(f"all_to_all_single: {what} dim 0 ({rows}) is not divisible by "
                                 f"the group's size {n}; pass {what}_split_sizes")
            return [rows // n * row] * n
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"all_to_all_single: {what}_split_sizes {list(splits)} must have "
                             f"{n} entries summing to {what}'s dim 0 ({rows})")
        return [int(s) * row for s in splits]

    sc = counts(input, input_split_sizes, "input")
    rc = counts(output, output_split_sizes, "output")
    sbuf = _bytes(np.ascontiguousarray(input._data))
    out, back = _contig(output)
    MPI = mpi()

    def finish(w):
        if back:
            back()
        _bump(output)
    return _run(pg, "all_to_all_single", 0,
                lambda: pg._comm.Ialltoallv([sbuf, (sc, _offsets(sc)[0]), MPI.BYTE],
                                            [_bytes(out), (rc, _offsets(rc)[0]), MPI.BYTE]),
                [output], async_op, finish)


def barrier(group=None, async_op=False, device_ids=None):
    """Synchronizes all processes of the group: returns once every rank entered it."""
    pg = _resolve(group)
    if pg is None or pg.size() == 1:
        return None
    return _run(pg, "barrier", 0, lambda: pg._comm.Ibarrier(), [], async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that raises `DistBackendError` naming the ranks that did not arrive within
    ``timeout`` (default: the group's), on every rank that waited."""
    pg = _resolve(group)
    if pg is None or pg.size() == 1:
        return None
    w = _run(pg, "monitored_barrier", 0, lambda: pg._comm.Ibarrier(), [], True)
    w.wait(timeout)
    return None


# ---- point-to-point --------------------------------------------------------------------
def _p2p_start(pg, name, tensor, peer, tag):
    MPI = mpi()
    if name in ("send", "isend"):
        a = np.ascontiguousarray(tensor._data)
        req = pg._comm.Isend([_bytes(a), MPI.BYTE], dest=pg._group_rank(peer), tag=tag)
        return Work(pg, name, pg._seq, [req], outputs=[tensor], peer=peer)
    a, back = _contig(tensor)
    src = MPI.ANY_SOURCE if peer is None else pg._group_rank(peer)
    req = pg._comm.Irecv([_bytes(a), MPI.BYTE], source=src, tag=tag)

    def finish(w):
        if back:
            back()
        _bump(tensor)
    return Work(pg, name, pg._seq, [req], finish, [tensor], peer=peer)


def _p2p_group(group, peer, what):
    pg = _resolve(group)
    if pg is not None and peer is not None and peer == pg._ranks[pg.rank()]:
        raise ValueError(f"Invalid {what} rank: {what} rank should not be the same as the rank "
                         f"of the current process.")
    return pg


def _peer(pg, peer, group_peer):
    if group_peer is not None:
        return pg._ranks[group_peer]
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst`` asynchronously; returns a `Work`."""
    _check_tensor(tensor, "isend")
    pg = _resolve(group)
    if pg is None:
        return None
    dst = _peer(pg, dst, group_dst)
    _p2p_group(group, dst, "destination")
    return _p2p_start(pg, "isend", tensor, dst, tag)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from rank ``src`` (None: any rank) asynchronously; returns a
    `Work` (``work.source_rank()`` names the sender)."""
    _check_tensor(tensor, "irecv")
    pg = _resolve(group)
    if pg is None:
        return None
    src = _peer(pg, src, group_src)
    _p2p_group(group, src, "source")
    return _p2p_start(pg, "irecv", tensor, src, tag)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Sends ``tensor`` to rank ``dst``, returning once the message was handed over."""
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w._name = "send"
        w.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into ``tensor`` from rank ``src`` (None: any rank); returns the sender's
    rank (-1 for a non-member)."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w._name = "recv"
    w.wait()
    return w.source_rank()


class P2POp:
    """A point-to-point operation for `batch_isend_irecv`: ``op`` is `isend` or `irecv`."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv, send, recv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed."
                             "isend`` or ``torch.distributed.irecv``.")
        self.op = {send: isend, recv: irecv}.get(op, op)
        self.tensor = tensor
        self.group = group
        self.tag = tag
        self.peer = peer if group_peer is None else _resolve(group)._ranks[group_peer]
        self.group_peer = group_peer

    def __repr__(self):
        return f"P2POp({self.op.__name__} peer={self.peer} tag={self.tag})"


def batch_isend_irecv(p2p_op_list):
    """Starts every operation of ``p2p_op_list`` and returns their `Work` objects."""
    if not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise TypeError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                        "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag) for p in p2p_op_list]
