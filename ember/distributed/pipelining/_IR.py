"""Splitting a model into pipeline stages: `pipe_split`, `SplitPoint` and `pipeline`.

`pipeline` traces the model with ember.fx (``pipe_split()`` calls stay in the graph as
markers; ``split_spec`` adds markers around named submodules), cuts the graph at the
markers with ``split_module`` and returns a `Pipe` whose ``submod_<i>`` are the stages.
Each stage keeps the original parameter names (``layers.3.weight``) and shares the
original parameter objects.  A stage may only use the previous stage's outputs (for the
first stage: the model's inputs); a value that skips a stage is reported, not routed.
"""
import dataclasses
import enum
import threading

from ...fx import GraphModule, Tracer
from ...fx.passes.split_module import split_module
from ...nn import Module

__all__ = ["pipe_split", "SplitPoint", "Pipe", "PipeInfo", "pipeline"]


_TRACING = threading.local()


def pipe_split():
    """Marks a stage boundary inside a model's ``forward``; does nothing when run eagerly."""
    tracer = getattr(_TRACING, "tracer", None)
    if tracer is not None:
        tracer.create_proxy("call_function", pipe_split, (), {})
    return None


class SplitPoint(enum.Enum):
    """Where `pipeline`'s ``split_spec`` cuts around a submodule: before it runs
    (``BEGINNING``) or after (``END``)."""
    BEGINNING = 1
    END = 2


class _PipeTracer(Tracer):
    def __init__(self, split_spec):
        super().__init__()
        self.split_spec = dict(split_spec or {})
        self.seen = set()

    def trace(self, root, concrete_args=None):
        _TRACING.tracer = self
        try:
            return super().trace(root, concrete_args)
        finally:
            _TRACING.tracer = None

    def call_module(self, m, forward, args, kwargs):
        name = self.path_of_module(m)
        where = self.split_spec.get(name)
        if where is not None:
            self.seen.add(name)
        if where == SplitPoint.BEGINNING:
            self.create_proxy("call_function", pipe_split, (), {})
        out = super().call_module(m, forward, args, kwargs)
        if where == SplitPoint.END:
            self.create_proxy("call_function", pipe_split, (), {})
        return out


class _Stage(Module):
    """One stage: the split-out GraphModule, fed the previous stage's outputs reordered to
    the order its placeholders expect."""

    def __init__(self, gm, perm):
        super().__init__()
        self.gm = gm
        self._perm = tuple(perm)

    def forward(self, *args):
        return self.gm(*[args[i] for i in self._perm])

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        # the stage's parameters under the original model's names
        yield from self.gm.named_parameters(prefix, recurse, remove_duplicate)

    def state_dict(self, *args, **kwargs):
        return self.gm.state_dict(*args, **kwargs)


@dataclasses.dataclass
class PipeInfo:
    """What `build_stage` needs to know of a pipe."""
    graph: object
    num_stages: int
    has_loss_and_backward: bool


class Pipe(Module):
    """A model cut into ``num_stages`` stages (``split_gm.submod_<i>``).  Calling it runs
    the stages in order, as the original model; `build_stage` makes the `PipelineStage` of
    one stage for a rank."""

    def __init__(self, split_gm, num_stages, stage_modules):
        super().__init__()
        self.split_gm = split_gm
        self.num_stages = num_stages
        self.has_loss_and_backward = False
        self._stage_modules = stage_modules
        self.pipe_info = PipeInfo(split_gm.graph, num_stages, False)

    def forward(self, *args, **kwargs):
        return self.split_gm(*args, **kwargs)

    def get_stage_module(self, stage_idx):
        if not 0 <= stage_idx < self.num_stages:
            raise ValueError(f"Invalid stage index {stage_idx}: the pipe has "
                             f"{self.num_stages} stages")
        return self._stage_modules[stage_idx]

    def build_stage(self, stage_index, device=None, group=None):
        from .stage import PipelineStage
        return PipelineStage(self.get_stage_module(stage_index), stage_index, self.num_stages,
                             device, group=group)

    def info(self):
        return f"Pipe with {self.num_stages} stages:\n{self.split_gm.graph}"


def pipeline(module, mb_args, mb_kwargs=None, split_spec=None, split_policy=None):
    r"""Traces ``module`` and splits it into stages at its ``pipe_split()`` calls and at
    ``split_spec`` (``{"layers.2": SplitPoint.BEGINNING}``).

    Args:
        module: the model.
        mb_args: example positional arguments of one microbatch (their number fixes the
            stage-0 inputs; tracing is symbolic).
        mb_kwargs: keyword arguments of one microbatch (not supported: pass positionally).
        split_spec: extra split points by submodule name.
        split_policy: not supported (use markers or ``split_spec``).

    Example::
        >>> pipe = pipeline(model, mb_args=(x_mb,))
        >>> stage = pipe.build_stage(rank, device="cpu")
    """
    if mb_kwargs:
        raise NotImplementedError("pipeline: mb_kwargs are not supported; pass inputs "
                                  "positionally")
    if split_policy is not None:
        raise NotImplementedError("pipeline: split_policy is not supported; mark splits with "
                                  "pipe_split() or split_spec")
    tracer = _PipeTracer(split_spec)
    graph = tracer.trace(module)
    unknown = set(tracer.split_spec) - tracer.seen
    if unknown:
        raise ValueError(f"pipeline: split_spec names submodules the forward never calls: "
                         f"{sorted(unknown)}")
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) < len(tuple(mb_args)):
        raise ValueError(f"pipeline: {len(tuple(mb_args))} mb_args for a forward taking "
                         f"{len(placeholders)}")
    stage_of, stage = {}, 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is pipe_split:
            if node.users:
                raise RuntimeError("pipe_split() returns nothing to use")
            stage += 1
            graph.erase_node(node)
            continue
        stage_of[node] = stage
    num_stages = stage + 1
    gm = GraphModule(module, graph)
    split = split_module(gm, module, lambda n: stage_of[n])
    modules = []
    prev_outputs = [n.name for n in graph.nodes if n.op == "placeholder"]
    calls = [n for n in split.graph.nodes if n.op == "call_module"]
    if len(calls) != num_stages:
        raise RuntimeError(f"pipeline: {num_stages - len(calls)} stage(s) would be empty; "
                           "remove the adjacent split points")
    for i, call in enumerate(calls):
        sub = getattr(split, call.target)
        ins = [n.name for n in sub.graph.nodes if n.op == "placeholder"]
        missing = [x for x in ins if x not in prev_outputs]
        if missing:
            raise NotImplementedError(
                f"pipeline: stage {i} uses {missing}, which the previous stage does not "
                "produce (a value skipping a stage); move the split points")
        perm = [prev_outputs.index(x) for x in ins]
        modules.append(sub if perm == list(range(len(prev_outputs))) else _Stage(sub, perm))
        outs = next(n for n in sub.graph.nodes if n.op == "output").args[0]
        outs = outs if isinstance(outs, tuple) else (outs,)
        prev_outputs = [_orig_name(o) for o in outs]
    return Pipe(split, num_stages, modules)


def _orig_name(node):
    # split_module names a partition's placeholders after the producing node
    return node.name
