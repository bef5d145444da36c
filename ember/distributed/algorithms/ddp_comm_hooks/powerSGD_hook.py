"""PowerSGD gradient compression (Vogels et al., NeurIPS 2019) as DDP communication hooks.

Each gradient matrix M (n x m) is approximated by P Q^T with P (n x r), Q (m x r): one
step of subspace (power) iteration per training step, Q warm-started from the previous
step.  Only P and Q are all-reduced, (n + m) r numbers instead of n m.  The part of the
gradient the approximation misses is kept locally (error feedback) and added to the
next step's gradient, so nothing is lost over time.

The collectives of one bucket are chained: the uncompressed tensors' all-reduce starts
inside the hook, overlapping backward; the P and Q all-reduces, which need the previous
result, run when DDP waits on the bucket.  All of them are issued on the thread that
waits, in bucket order, so every rank issues its collectives in the same order.
"""
import logging
import math

import numpy as np

from ...._core.tensor import wrap
from ....futures import Future
from . import default_hooks as default

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]

logger = logging.getLogger(__name__)


def _orthogonalize(matrices, epsilon=0):
    """Orthonormalizes the columns of each matrix of the batch ``matrices`` (b, n, r) in place:
    Gram-Schmidt for r <= 2 or half precision, QR otherwise."""
    rank = matrices.shape[2]
    if rank <= 2 or matrices.dtype.itemsize <= 2:
        _orthogonalize_gram_schmidt(matrices, epsilon)
    else:
        q, _ = np.linalg.qr(matrices)
        matrices[...] = q


def _orthogonalize_gram_schmidt(matrices, epsilon=0):
    num_cols = matrices.shape[2]
    for i in range(num_cols):
        col = matrices[:, :, i:i + 1]
        norm = np.sqrt(np.sum(col * col, axis=1, keepdims=True))
        if epsilon == 0:
            # an all-zero column stays zero instead of becoming NaN (torch's result)
            with np.errstate(invalid="ignore", divide="ignore"):
                np.divide(col, norm, out=col, where=norm != 0)
        else:
            col /= norm + epsilon
        if i + 1 < num_cols:
            rest = matrices[:, :, i + 1:]
            rest -= np.sum(col * rest, axis=1, keepdims=True) * col


def _should_compress(num_rows, num_cols, matrix_approximation_rank, min_compression_rate):
    """(compress?, uncompressed numel, compressed numel) of one n x m matrix at rank r."""
    uncompressed_size = num_rows * num_cols
    compressed_size = (num_rows + num_cols) * matrix_approximation_rank
    return (compressed_size * min_compression_rate < uncompressed_size,
            uncompressed_size, compressed_size)


def _report_compression_stats(bucket, state):
    if bucket.is_last() and state.iter >= state.next_stats_report:
        stats = state.compression_stats()
        logger.info("Compression stats: iter %s, total before compression %s, total after "
                    "compression %s, rate %s", state.iter, stats[1], stats[2], stats[0])
        state.next_stats_report = state.iter + state.compression_stats_logging_frequency


class PowerSGDState:
    r"""Stores the hyperparameters and the internal state of the PowerSGD hooks.

    Args:
        process_group: the group to all-reduce over (None: the world group).
        matrix_approximation_rank: the rank r of the low-rank approximation.
        start_powerSGD_iter: plain all-reduce (vanilla allreduce) runs for this many
            iterations before compression starts (warm-up, as the paper recommends).
        min_compression_rate: a matrix is compressed only when that shrinks it by at least
            this factor; the others are all-reduced uncompressed.
        use_error_feedback: keep the local compression error and add it to the next
            gradient.
        warm_start: reuse the previous iteration's Q (and memory) instead of a fresh random one.
        orthogonalization_epsilon: added to column norms in Gram-Schmidt to avoid division
            by zero.
        random_seed: seed of the random initial Q (the same on every rank).
        compression_stats_logging_frequency: log compression stats every this many iterations.
        batch_tensors_with_same_shape: compress tensors of the same shape as one batch.

    Beyond torch, `state_dict` / `load_state_dict` save and restore the whole state (error
    feedback, warm-start memories, iteration count and random state) in an ``ember.save``
    checkpoint that loads with ``weights_only=True``.
    """

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter",
                 "min_compression_rate", "orthogonalization_epsilon", "use_error_feedback",
                 "warm_start", "batch_tensors_with_same_shape", "rng", "error_dict",
                 "p_memory_dict", "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency",
                 "next_stats_report"]

    def __init__(self, process_group, matrix_approximation_rank=1, start_powerSGD_iter=1_000,
                 min_compression_rate=2, use_error_feedback=True, warm_start=True,
                 orthogonalization_epsilon=0, random_seed=0,
                 compression_stats_logging_frequency=10_000,
                 batch_tensors_with_same_shape=False):
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError(
                "Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or `warm_start` is "
                "enabled, because PowerSGD can only be applied after the first two iterations "
                "in DDP.")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.error_dict = {}
        self.p_memory_dict = {}
        self.q_memory_dict = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self):
        """Everything but the process group, which cannot be pickled."""
        return {slot: getattr(self, slot) for slot in self.__slots__ if slot != "process_group"}

    def __setstate__(self, state):
        """Restores a pickled state; the process group becomes the default (world) group."""
        self.process_group = None
        for slot, value in state.items():
            setattr(self, slot, value)

    _HYPER = ("matrix_approximation_rank", "start_powerSGD_iter", "min_compression_rate",
              "use_error_feedback", "warm_start", "orthogonalization_epsilon",
              "batch_tensors_with_same_shape", "iter", "total_numel_before_compression",
              "total_numel_after_compression", "compression_stats_logging_frequency",
              "next_stats_report")

    def state_dict(self):
        """The state as a dict of tensors and Python scalars (no process group)."""
        kind, keys, pos, has_gauss, cached = self.rng.get_state()
        return {
            **{k: getattr(self, k) for k in self._HYPER},
            "rng": {"keys": wrap(keys.astype(np.int64)), "pos": int(pos),
                    "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
            "error_dict": {int(k): v.clone() for k, v in self.error_dict.items()},
            "p_memory_dict": {int(k): v.clone() for k, v in self.p_memory_dict.items()},
            "q_memory_dict": {int(k): v.clone() for k, v in self.q_memory_dict.items()},
        }

    def load_state_dict(self, state_dict):
        """Restores a state saved by `state_dict` (the process group is kept)."""
        for k in self._HYPER:
            if k in state_dict:
                setattr(self, k, state_dict[k])
        r = state_dict["rng"]
        self.rng.set_state(("MT19937", r["keys"]._data.astype(np.uint32), int(r["pos"]),
                            int(r["has_gauss"]), float(r["cached_gaussian"])))
        for name in ("error_dict", "p_memory_dict", "q_memory_dict"):
            setattr(self, name, {int(k): v.clone() for k, v in state_dict[name].items()})

    def maybe_increase_iter(self, bucket):
        """Counts an iteration when the last bucket of a backward pass is processed."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter:
            logger.info("Start to apply PowerSGD after %s iterations.", self.iter)

    def compression_stats(self):
        """(compression rate, numel before compression, numel after compression) so far."""
        rate = (self.total_numel_before_compression / self.total_numel_after_compression
                if self.total_numel_after_compression > 0 else 0)
        return rate, self.total_numel_before_compression, self.total_numel_after_compression


def _dist():
    from .... import distributed as dist
    return dist


def _allreduce_now(array, group):
    """Sum-all-reduces the NumPy ``array`` in place (blocking)."""
    t = wrap(array)
    _dist().all_reduce(t, group=group)
    if t._data is not array:
        np.copyto(array, t._data)
    return array


def _random_q(state, shape, dtype):
    seed = state.rng.randint(1_000_000_000)
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _deferred(run):
    """A Future completed by ``run()`` when it is first waited on."""
    fut = Future()

    def waiter():
        try:
            fut.set_result(run())
        except BaseException as e:  # noqa: BLE001 - the Future carries it
            fut.set_exception(e)

    fut._waiter = waiter
    return fut


def powerSGD_hook(state, bucket):
    r"""PowerSGD: all-reduces a rank-``matrix_approximation_rank`` approximation of each
    gradient matrix of the bucket instead of the gradient itself.

    For each gradient M (viewed as n x m, n its first dimension) that compression shrinks by
    at least ``min_compression_rate`` (the others are all-reduced as they are):

    1. with error feedback, add the error kept from the previous step to M;
    2. P = M Q with Q from the previous step (warm start) or random, orthogonalized;
    3. all-reduce P, orthogonalize it; Q = M^T P; all-reduce Q and divide by world size;
    4. M <- P Q^T; the error kept is the input minus this approximation.

    The first ``start_powerSGD_iter`` iterations use plain all-reduce.

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1,
        ...                       start_powerSGD_iter=10, min_compression_rate=0.5)
        >>> ddp_model.register_comm_hook(state, powerSGD_hook)
    """
    group = default._group(state.process_group)
    world_size = _dist().get_world_size(group)
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(group, input_tensor)

    x = input_tensor._data
    dtype = x.dtype
    idx = bucket.index()
    x_cp = None
    if state.use_error_feedback:
        if idx in state.error_dict:
            x += state.error_dict[idx]._data
        else:
            state.error_dict[idx] = wrap(np.zeros(x.shape[0], dtype=dtype))
        x_cp = x.copy()

    grads = [g._data for g in bucket.gradients()]
    to_compress, uncompressed = [], []
    p_size = q_size = 0
    for g in grads:
        if g.ndim == 0:
            uncompressed.append(g)
            state.total_numel_before_compression += 1
            state.total_numel_after_compression += 1
            continue
        matrix = g.reshape(g.shape[0], -1)
        n, m = matrix.shape
        r = min(n, m, state.matrix_approximation_rank)
        ok, before, after = _should_compress(n, m, r, state.min_compression_rate)
        state.total_numel_before_compression += before
        if ok:
            to_compress.append(matrix)
            p_size += n * r
            q_size += m * r
            state.total_numel_after_compression += after
        else:
            uncompressed.append(g)
            state.total_numel_after_compression += before
    _report_compression_stats(bucket, state)

    # batches of matrices (b, n, m) to compress together
    if state.batch_tensors_with_same_shape:
        by_shape = {}
        for mtx in to_compress:
            by_shape.setdefault(mtx.shape, []).append(mtx)
        groups = list(by_shape.values())
    else:
        groups = [[mtx] for mtx in to_compress]
    batches = [np.stack(g) for g in groups]

    need_random = not state.warm_start or idx not in state.p_memory_dict
    if need_random:
        state.p_memory_dict[idx] = wrap(np.empty(p_size, dtype=dtype))
        state.q_memory_dict[idx] = wrap(np.empty(q_size, dtype=dtype))
    p_mem, q_mem = state.p_memory_dict[idx]._data, state.q_memory_dict[idx]._data
    ps, qs = [], []
    po = qo = 0
    for b in batches:
        nb, n, m = b.shape
        r = min(n, m, state.matrix_approximation_rank)
        ps.append(p_mem[po:po + nb * n * r].reshape(nb, n, r))
        qs.append(q_mem[qo:qo + nb * m * r].reshape(nb, m, r))
        po += nb * n * r
        qo += nb * m * r
    for q in qs:
        if need_random:
            q[...] = _random_q(state, q.shape, dtype)
        _orthogonalize(q, state.orthogonalization_epsilon)
    for b, q, p in zip(batches, qs, ps):
        np.matmul(b, q, out=p)

    unc = wrap(np.concatenate([u.ravel() for u in uncompressed]) if uncompressed
               else np.zeros(0, dtype=dtype))
    unc_work = _dist().all_reduce(unc, group=group, async_op=True)

    def finish():
        unc_work.wait()
        flat = unc._data / world_size
        o = 0
        for u in uncompressed:
            u[...] = flat[o:o + u.size].reshape(u.shape)
            o += u.size
        _allreduce_now(p_mem, group)
        for p in ps:
            _orthogonalize(p, state.orthogonalization_epsilon)
        for b, p, q in zip(batches, ps, qs):
            np.matmul(b.transpose(0, 2, 1), p, out=q)
        _allreduce_now(q_mem, group)
        np.divide(q_mem, world_size, out=q_mem)
        for grp, b, p, q in zip(groups, batches, ps, qs):
            approx = np.matmul(p, q.transpose(0, 2, 1))
            for i, mtx in enumerate(grp):
                mtx[...] = approx[i]
        if state.use_error_feedback:
            state.error_dict[idx] = wrap(x_cp - x)
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        state.maybe_increase_iter(bucket)
        return input_tensor

    return _deferred(finish)


def batched_powerSGD_hook(state, bucket):
    r"""PowerSGD on the whole bucket at once: the flat buffer, zero-padded to a square
    s x s matrix (s = ceil(sqrt(numel))), is approximated at rank
    ``matrix_approximation_rank``.  Faster than `powerSGD_hook` but usually less accurate,
    because the square matrix has no relation to the layers' structure.

    Example::
        >>> state = PowerSGDState(process_group=None, matrix_approximation_rank=1)
        >>> ddp_model.register_comm_hook(state, batched_powerSGD_hook)
    """
    group = default._group(state.process_group)
    world_size = _dist().get_world_size(group)
    input_tensor = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default._allreduce_fut(group, input_tensor)

    total = input_tensor.shape[0]
    side = math.ceil(math.sqrt(total))
    r = state.matrix_approximation_rank
    state.total_numel_before_compression += total
    state.total_numel_after_compression += side * r * 2
    _report_compression_stats(bucket, state)
    dtype = input_tensor.dtype.np
    padded = np.zeros(side * side, dtype=dtype)
    padded[:total] = input_tensor._data
    idx = bucket.index()
    x_cp = None
    if state.use_error_feedback:
        if idx in state.error_dict:
            padded += state.error_dict[idx]._data
        else:
            state.error_dict[idx] = wrap(np.zeros(side * side, dtype=dtype))
        x_cp = padded.copy()
    matrix = padded.reshape(side, side)
    if not state.warm_start or idx not in state.p_memory_dict:
        state.p_memory_dict[idx] = wrap(np.empty((side, r), dtype=dtype))
        state.q_memory_dict[idx] = wrap(_random_q(state, (side, r), dtype))
    p = state.p_memory_dict[idx]._data
    q = state.q_memory_dict[idx]._data
    _orthogonalize(q[None], state.orthogonalization_epsilon)
    np.matmul(matrix, q, out=p)
    p_work = _dist().all_reduce(state.p_memory_dict[idx], group=group, async_op=True)

    def finish():
        p_work.wait()
        pp = state.p_memory_dict[idx]._data
        _orthogonalize(pp[None], state.orthogonalization_epsilon)
        np.matmul(matrix.T, pp, out=q)
        _allreduce_now(q, group)
        np.divide(q, world_size, out=q)
        np.matmul(pp, q.T, out=matrix)
        if state.use_error_feedback:
            state.error_dict[idx] = wrap(x_cp - padded)
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        input_tensor._data[...] = padded[:total]
        state.maybe_increase_iter(bucket)
        return input_tensor

    return _deferred(finish)
