"""Pipeline schedules: the order in which each rank runs forward (F) and backward (B)
steps of its stages' microbatches.

Every schedule here is a list of actions per rank, replayed as is.  Sends never block and
receives wait, so a set of orders runs without deadlock exactly when `simulate` can finish
it; `order_for` builds GPipe (all forwards, then all backwards), 1F1B (a warm-up of
forwards, then alternating) and interleaved 1F1B (several stages per rank, Megatron's
grouping of microbatches in rounds of the pipeline's size).
"""
from .microbatch import merge_chunks, split_args_kwargs_into_chunks

__all__ = ["PipelineScheduleSingle", "PipelineScheduleMulti", "ScheduleGPipe",
           "Schedule1F1B", "ScheduleInterleaved1F1B", "ScheduleLoopedBFS", "order_for",
           "simulate"]


def _gpipe(stages, n, rank, world):
    fwd = [("F", s, m) for m in range(n) for s in stages]
    bwd = [("B", s, m) for m in range(n) for s in reversed(stages)]
    return fwd + bwd


def _looped_bfs(stages, n, rank, world):
    fwd = [("F", s, m) for s in stages for m in range(n)]
    bwd = [("B", s, m) for s in reversed(stages) for m in range(n)]
    return fwd + bwd


def _one_f_one_b(stage, num_stages, n):
    warm = min(n, num_stages - stage)
    order = [("F", stage, m) for m in range(warm)]
    nxt = warm
    for m in range(n):
        order.append(("B", stage, m))
        if nxt < n:
            order.append(("F", stage, nxt))
            nxt += 1
    return order


def _interleaved(stages, n, rank, world):
    v = len(stages)
    fwd, bwd = [], []
    for start in range(0, n, world):
        block = range(start, min(start + world, n))
        fwd += [("F", s, m) for s in stages for m in block]
        bwd += [("B", s, m) for s in reversed(stages) for m in block]
    total = len(fwd)
    warm = min(total, (v - 1) * world + 2 * (world - rank - 1) + 1)
    order = fwd[:warm]
    f = warm
    for b in bwd:
        order.append(b)
        if f < total:
            order.append(fwd[f])
            f += 1
    return order


def order_for(kind, rank, world, num_stages, n):
    """The action list (``("F"|"B", stage, microbatch)``) of ``rank`` for schedule
    ``kind`` ("gpipe", "1f1b" or "interleaved")."""
    stages = list(range(rank, num_stages, world))
    if kind == "gpipe":
        return _gpipe(stages, n, rank, world)
    if kind == "1f1b":
        if len(stages) != 1:
            raise ValueError("Schedule1F1B runs one stage per rank")
        return _one_f_one_b(stages[0], num_stages, n)
    if kind == "interleaved":
        return _interleaved(stages, n, rank, world)
    if kind == "looped_bfs":
        return _looped_bfs(stages, n, rank, world)
    raise ValueError(kind)


def simulate(orders, num_stages):
    """Replays per-rank orders in lock step; returns the number of rounds, or raises
    RuntimeError if they deadlock or run a step before its inputs exist."""
    done = set()
    pos = [0] * len(orders)
    rounds = 0
    while any(p < len(o) for p, o in zip(pos, orders)):
        ready = []
        for r, o in enumerate(orders):
            if pos[r] >= len(o):
                continue
            kind, s, m = o[pos[r]]
            if kind == "F":
                deps = [("F", s - 1, m)] if s > 0 else []
            else:
                deps = [("F", s, m)] + ([("B", s + 1, m)] if s < num_stages - 1 else [])
            if all(d in done for d in deps):
                ready.append(r)
        if not ready:
            raise RuntimeError(f"pipeline schedule deadlocks at round {rounds}: "
                               f"{[o[p] if p < len(o) else None for p, o in zip(pos, orders)]}")
        for r in ready:
            done.add(orders[r][pos[r]])
            pos[r] += 1
        rounds += 1
    return rounds


class _Schedule:
    _kind = None

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        if n_microbatches < 1:
            raise ValueError(f"n_microbatches must be positive, got {n_microbatches}")
        self._stages = list(stages)
        self._n_microbatches = n_microbatches
        self._loss_fn = loss_fn
        self._args_chunk_spec = args_chunk_spec
        self._kwargs_chunk_spec = kwargs_chunk_spec
        self._output_merge_spec = output_merge_spec
        self.scale_grads = scale_grads
        st = self._stages[0]
        self._num_stages = st.num_stages
        self._rank, self._world = st.group_rank, st.group_size
        mine = sorted(s.stage_index for s in self._stages)
        if mine != list(range(self._rank, self._num_stages, self._world)):
            raise ValueError(f"rank {self._rank} must hold stages "
                             f"{list(range(self._rank, self._num_stages, self._world))}, "
                             f"got {mine}")
        self._order = order_for(self._kind, self._rank, self._world, self._num_stages,
                                n_microbatches)

    def step(self, *args, target=None, losses=None, **kwargs):
        """Runs one iteration over the batch: the first stage's rank passes the inputs, the
        last stage's rank the ``target`` (and may pass a list for the microbatch
        ``losses``).  Returns the merged output on the last stage's rank, else None.
        Parameter gradients accumulate in the stage modules (scaled by 1/microbatches)."""
        by_index = {s.stage_index: s for s in self._stages}
        n = self._n_microbatches
        for s in self._stages:
            s.clear_runtime_states()
        arg_mbs, kwarg_mbs = ([()] * n, [{}] * n)
        if 0 in by_index:
            arg_mbs, kwarg_mbs = split_args_kwargs_into_chunks(
                args, kwargs, n, self._args_chunk_spec, self._kwargs_chunk_spec)
        last = by_index.get(self._num_stages - 1)
        targets = [None] * n
        if last is not None and target is not None:
            targets = split_args_kwargs_into_chunks((target,), {}, n)[0]
            targets = [t[0] for t in targets]
        train = self._loss_fn is not None and (last is None or target is not None)
        try:
            for kind, s, m in self._order:
                stage = by_index[s]
                if kind == "F":
                    stage.forward_one_chunk(m, arg_mbs[m], kwarg_mbs[m], target=targets[m],
                                            loss_fn=self._loss_fn, with_grad=train)
                elif train:
                    stage.backward_one_chunk(m)
        finally:
            for st in self._stages:
                st._wait_sends()
        if train and self.scale_grads:
            for st in self._stages:
                st.scale_grads(n)
        if last is None:
            return None
        if losses is not None:
            losses.extend(last.losses[m] for m in range(n) if m in last.losses)
        return merge_chunks([last.outputs[m] for m in range(n)], self._output_merge_spec)

    def eval(self, *args, target=None, losses=None, **kwargs):
        """Forward only (no gradients), on every microbatch."""
        fn, self._loss_fn = self._loss_fn, None
        try:
            return self.step(*args, target=target, losses=losses, **kwargs)
        finally:
            self._loss_fn = fn


class PipelineScheduleSingle(_Schedule):
    """A schedule for one stage per rank."""

    def __init__(self, stage, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__([stage], n_microbatches, loss_fn, args_chunk_spec,
                         kwargs_chunk_spec, output_merge_spec, scale_grads)
        self._stage = stage


class PipelineScheduleMulti(_Schedule):
    """A schedule for several stages per rank (stage ``s`` on rank ``s % world``)."""

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True):
        super().__init__(stages, n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads)


class ScheduleGPipe(PipelineScheduleSingle):
    """All microbatches forward, then all backward."""
    _kind = "gpipe"


class Schedule1F1B(PipelineScheduleSingle):
    """Forward warm-up, then one forward and one backward alternately, so a stage holds at
    most ``num_stages - stage_index`` microbatches' activations."""
    _kind = "1f1b"


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """1F1B over several stages per rank (virtual stages), microbatches taken in rounds of
    the pipeline's size."""
    _kind = "interleaved"

    def __init__(self, stages, n_microbatches, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads=True,
                 backward_requires_autograd=True, defer_pp_recv=False):
        super().__init__(stages, n_microbatches, loss_fn, args_chunk_spec, kwargs_chunk_spec,
                         output_merge_spec, scale_grads)


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Several stages per rank, breadth first: every microbatch through a rank's first
    stage, then its next stage, ...; backward in the reverse order."""
    _kind = "looped_bfs"

    def __init__(self, stages, n_microbatches, loss_fn=None, output_merge_spec=None,
                 scale_grads=True, backward_requires_autograd=True, defer_pp_recv=False):
        super().__init__(stages, n_microbatches, loss_fn,
                         output_merge_spec=output_merge_spec, scale_grads=scale_grads)
