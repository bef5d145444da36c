"""`PipelineStage`: one stage of a pipeline on one rank, with its point-to-point traffic.

Stage ``s`` lives on group rank ``s % group_size``.  Activations go forward and gradients
backward as tensors sent with ``isend`` (never waited on before the step ends, so two
neighbours sending to each other cannot deadlock) and received with ``irecv``.  Each
message is preceded by a small int64 header (count, dtype and shape of each tensor), so
stages need no shape declarations.  Tags keep a stage's activations (``2*s``) apart from
its gradients (``2*s+1``); between two stages on the same rank (one rank running several
stages), values pass through a local mailbox.
"""
import collections

import numpy as np

__all__ = ["PipelineStage", "build_stage"]

_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8",
           "uint8", "bool", "complex64", "complex128")
_MAX_DIMS = 8
_LOCAL = collections.defaultdict(collections.deque)   # (tag) -> values sent to this rank


def _dist():
    from ... import distributed as dist
    return dist


def _flat(value):
    return value if isinstance(value, tuple) else (value,)


class PipelineStage:
    r"""Stage ``stage_index`` of ``num_stages``, running ``submodule`` on this rank.

    Args:
        submodule: the stage's module (from `Pipe.build_stage`, or written by hand).
        stage_index, num_stages: this stage's position.
        device: the device of the stage ("cpu").
        input_args, output_args, output_grads, input_grads: accepted for torch's
            signature; shapes travel with the data, so they are not needed.
        group: the process group of the pipeline (default: the world); stage ``s`` runs
            on its rank ``s % size``.
    """

    def __init__(self, submodule, stage_index, num_stages, device=None, input_args=None,
                 output_args=None, output_grads=None, input_grads=None, group=None,
                 dw_builder=None, get_mesh=None):
        if not 0 <= stage_index < num_stages:
            raise ValueError(f"Stage index {stage_index} is out of range of {num_stages}")
        dist = _dist()
        self.submod = submodule
        self.stage_index = stage_index
        self.num_stages = num_stages
        self.device = device
        self.group = group
        self.group_size = dist.get_world_size(group) if dist.is_initialized() else 1
        self.group_rank = dist.get_rank(group) if dist.is_initialized() else 0
        if stage_index % self.group_size != self.group_rank:
            raise ValueError(f"stage {stage_index} belongs on group rank "
                             f"{stage_index % self.group_size}, not {self.group_rank}")
        self._pending = []
        self.clear_runtime_states()

    @property
    def is_first(self):
        return self.stage_index == 0

    @property
    def is_last(self):
        return self.stage_index == self.num_stages - 1

    def clear_runtime_states(self):
        self._saved = {}        # microbatch -> (inputs, outputs)
        self.outputs = {}       # last stage: microbatch -> output
        self.losses = {}

    # -- point to point --------------------------------------------------------------------
    def _rank_of(self, stage):
        return stage % self.group_size

    def _send(self, values, stage, tag):
        from .._ember import tensor
        dst = self._rank_of(stage)
        values = tuple(v.detach().contiguous() for v in values)
        if dst == self.group_rank:
            _LOCAL[tag].append(values)
            return
        dist = _dist()
        header = np.zeros(1 + len(values) * (2 + _MAX_DIMS), np.int64)
        header[0] = len(values)
        for i, v in enumerate(values):
            if v.dim() > _MAX_DIMS:
                raise ValueError(f"pipeline stages exchange tensors of at most {_MAX_DIMS} "
                                 f"dimensions, got {v.dim()}")
            base = 1 + i * (2 + _MAX_DIMS)
            header[base] = _DTYPES.index(str(v.dtype).rsplit(".", 1)[-1])
            header[base + 1] = v.dim()
            header[base + 2:base + 2 + v.dim()] = tuple(v.shape)
        size = tensor([header.size], dtype=_int64())
        for t in (size, tensor(header), *values):
            self._pending.append(dist.isend(t, group=self.group, group_dst=dst, tag=tag))
            self._pending.append(t)   # keeps the buffer alive until the send completes

    def _recv(self, stage, tag):
        from .._ember import empty
        from .. import _ember as ember
        src = self._rank_of(stage)
        if src == self.group_rank:
            return _LOCAL[tag].popleft()
        dist = _dist()
        size = empty(1, dtype=_int64())
        dist.irecv(size, group=self.group, group_src=src, tag=tag).wait()
        header = empty(int(size.item()), dtype=_int64())
        dist.irecv(header, group=self.group, group_src=src, tag=tag).wait()
        h = header.numpy()
        out = []
        for i in range(int(h[0])):
            base = 1 + i * (2 + _MAX_DIMS)
            code, nd = int(h[base]), int(h[base + 1])
            if not (0 <= code < len(_DTYPES) and 0 <= nd <= _MAX_DIMS):
                raise RuntimeError(f"pipeline stage {self.stage_index}: malformed message "
                                   f"from stage {stage}")
            t = empty(tuple(int(x) for x in h[base + 2:base + 2 + nd]),
                      dtype=getattr(ember, _DTYPES[code]))
            dist.irecv(t, group=self.group, group_src=src, tag=tag).wait()
            out.append(t)
        return tuple(out)

    def _wait_sends(self):
        for w in self._pending:
            if hasattr(w, "wait"):
                w.wait()
        self._pending = []

    # -- compute ---------------------------------------------------------------------------
    def forward_one_chunk(self, mb, args=(), kwargs=None, target=None, loss_fn=None,
                          with_grad=True):
        from .. import _ember as ember
        if self.is_first:
            inputs = tuple(args)
        else:
            inputs = self._recv(self.stage_index - 1, 2 * (self.stage_index - 1))
            if with_grad:
                inputs = tuple(t.requires_grad_(True) if t.is_floating_point() else t
                               for t in inputs)
        with ember.set_grad_enabled(with_grad):
            out = self.submod(*inputs, **(kwargs or {}) if self.is_first else {})
        outs = _flat(out)
        if with_grad:
            self._saved[mb] = (inputs, outs)
        if self.is_last:
            self.outputs[mb] = out
            if loss_fn is not None and target is not None:
                self.losses[mb] = loss_fn(out, target)
        else:
            self._send(outs, self.stage_index + 1, 2 * self.stage_index)
        return out

    def backward_one_chunk(self, mb):
        from .. import _ember as ember
        inputs, outs = self._saved.pop(mb)
        if self.is_last:
            if mb not in self.losses:
                raise RuntimeError("the last stage needs a loss_fn and a target for backward")
            ember.autograd.backward(self.losses[mb])
        else:
            grads = self._recv(self.stage_index + 1, 2 * (self.stage_index + 1) + 1)
            pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
            if pairs:
                ember.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        if not self.is_first:
            grads = tuple(t.grad if t.grad is not None else ember.zeros_like(t)
                          for t in inputs)
            self._send(grads, self.stage_index - 1, 2 * self.stage_index + 1)

    def scale_grads(self, factor):
        for p in self.submod.parameters():
            if p.grad is not None:
                p.grad.div_(factor)


def _int64():
    from .. import _ember as ember
    return ember.int64


def build_stage(stage_module, stage_index, pipe_info, device, group=None):
    """The `PipelineStage` of ``stage_module`` (stage ``stage_index`` of the pipe described
    by ``pipe_info``: a `Pipe`, or anything with ``num_stages``)."""
    return PipelineStage(stage_module, stage_index, pipe_info.num_stages, device, group=group)
