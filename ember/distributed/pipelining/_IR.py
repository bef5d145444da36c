"""Splitting a model into pipeline stages: `pipe_split`, `SplitPoint` and `pipeline`.

`pipeline` traces the model with ember.fx (``pipe_split()`` calls stay in the graph as
markers; ``split_spec`` adds markers around named submodules), cuts the graph at the
markers with ``split_module`` and returns a `Pipe` whose ``submod_<i>`` are the stages.
Each stage keeps the original parameter names (``layers.3.weight``) and shares the
original parameter objects.  A stage uses only the previous stage's outputs (the first
stage: the model's inputs); values that skip stages are carried through the ones between.
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


def _carry(value):
    """Passes a value through a stage that does not use it (a skip connection)."""
    return value


def _route_skips(graph, stage_of, ends, num_stages):
    """Makes each stage use only the previous stage's outputs (stage 0: the model's inputs):
    a value used ``k`` stages after the one that makes it is carried through the stages in
    between by `_carry` nodes, as torch's splitter passes such values along.  The model's
    outputs count as used after the last stage, so the last stage returns them all."""
    for node in list(graph.nodes):
        if node not in stage_of or node.op in ("get_attr", "output"):
            continue
        made = -1 if node.op == "placeholder" else stage_of[node]
        far = {}
        for user in list(node.users):
            used = num_stages if user.op == "output" else stage_of.get(user)
            if used is not None and used > made + 1:
                far.setdefault(used, []).append(user)
        if not far:
            continue
        value, carried = node, {}
        for k in range(made + 1, max(far)):
            with graph.inserting_before(ends[k]):
                value = graph.call_function(_carry, (value,))
            stage_of[value] = k
            carried[k] = value
        for used, users in far.items():
            for user in users:
                user.replace_input_with(node, carried[used - 1])


class _FirstStage(Module):
    """Stage 0: binds the step's positional and keyword inputs to the model's parameter
    names (defaults for the ones not given) and passes the stage's own inputs."""

    def __init__(self, gm, params, ins):
        super().__init__()
        self.gm = gm
        self._params = params            # [(name, has_default, default)]
        self._ins = tuple(ins)

    def forward(self, *args, **kwargs):
        if len(args) > len(self._params):
            raise TypeError(f"the first stage takes {len(self._params)} inputs, got "
                            f"{len(args)}")
        values = {}
        for i, (name, has_default, default) in enumerate(self._params):
            if i < len(args):
                if name in kwargs:
                    raise TypeError(f"the first stage got multiple values for {name!r}")
                values[name] = args[i]
            elif name in kwargs:
                values[name] = kwargs[name]
            elif has_default:
                values[name] = default
        unknown = set(kwargs) - {n for n, _, _ in self._params}
        if unknown:
            raise TypeError(f"the first stage got unexpected keyword arguments "
                            f"{sorted(unknown)}")
        missing = [n for n in self._ins if n not in values]
        if missing:
            raise TypeError(f"the first stage is missing inputs {missing}")
        return self.gm(*[values[n] for n in self._ins])

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self.gm.named_parameters(prefix, recurse, remove_duplicate)

    def state_dict(self, *args, **kwargs):
        return self.gm.state_dict(*args, **kwargs)


def pipeline(module, mb_args, mb_kwargs=None, split_spec=None, split_policy=None):
    r"""Traces ``module`` and splits it into stages at its ``pipe_split()`` calls, at
    ``split_spec`` (``{"layers.2": SplitPoint.BEGINNING}``) or where ``split_policy`` puts
    them.

    Values that skip stages (skip connections, inputs used late) are passed along through
    the stages in between, so each stage receives only its predecessor's outputs.

    Args:
        module: the model.
        mb_args: example positional arguments of one microbatch (tracing is symbolic: only
            their number matters).
        mb_kwargs: example keyword arguments of one microbatch; the first stage then takes
            them by name (``schedule.step(x, mask=m)``).
        split_spec: extra split points by submodule name.
        split_policy: a function taking the traced ``GraphModule`` and returning one with
            ``call_function`` nodes of `pipe_split` where the stages end.

    Example::
        >>> pipe = pipeline(model, mb_args=(x_mb,))
        >>> stage = pipe.build_stage(rank, device="cpu")
    """
    if split_spec is not None and split_policy is not None:
        raise ValueError("Cannot specify both `split_spec` and `split_policy`. Please use "
                         "only one of them.")
    tracer = _PipeTracer(split_spec)
    graph = tracer.trace(module)
    unknown = set(tracer.split_spec) - tracer.seen
    if unknown:
        raise ValueError(f"pipeline: split_spec names submodules the forward never calls: "
                         f"{sorted(unknown)}")
    if split_policy is not None:
        policed = split_policy(GraphModule(module, graph))
        if not isinstance(policed, GraphModule):
            raise TypeError(f"split_policy must return a GraphModule, got "
                            f"{type(policed).__name__}")
        graph = policed.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    names = [n.target for n in placeholders]
    n_in = len(tuple(mb_args)) + len(mb_kwargs or {})
    if len(placeholders) < n_in:
        raise ValueError(f"pipeline: {n_in} mb_args and mb_kwargs for a forward taking "
                         f"{len(placeholders)}")
    bad = sorted(set(mb_kwargs or {}) - set(names))
    if bad:
        raise TypeError(f"pipeline: mb_kwargs {bad} are not parameters of the forward "
                        f"({names})")
    stage_of, ends, stage = {}, [], 0
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is pipe_split:
            if node.users:
                raise RuntimeError("pipe_split() returns nothing to use")
            stage += 1
            ends.append(node)
            continue
        stage_of[node] = stage
    num_stages = stage + 1
    _route_skips(graph, stage_of, ends, num_stages)
    for node in ends:
        graph.erase_node(node)
    gm = GraphModule(module, graph)
    split = split_module(gm, module, lambda n: stage_of[n])
    modules = []
    prev_outputs = [n.name for n in placeholders]
    calls = [n for n in split.graph.nodes if n.op == "call_module"]
    if len(calls) != num_stages:
        raise RuntimeError(f"pipeline: {num_stages - len(calls)} stage(s) would be empty; "
                           "remove the adjacent split points")
    params = [(n.target, bool(n.args), n.args[0] if n.args else None) for n in placeholders]
    for i, call in enumerate(calls):
        sub = getattr(split, call.target)
        ins = [n.name for n in sub.graph.nodes if n.op == "placeholder"]
        missing = [x for x in ins if x not in prev_outputs]
        if missing:
            raise RuntimeError(f"pipeline: stage {i} uses {missing}, which the previous "
                               "stage does not pass on")
        perm = [prev_outputs.index(x) for x in ins]
        if i == 0:
            by_name = [names[prev_outputs.index(x)] for x in ins]
            modules.append(sub if by_name == names and ins == names
                           else _FirstStage(sub, params, by_name))
        else:
            modules.append(sub if perm == list(range(len(prev_outputs))) else _Stage(sub, perm))
        outs = next(n for n in sub.graph.nodes if n.op == "output").args[0]
        outs = outs if isinstance(outs, tuple) else (outs,)
        prev_outputs = [_orig_name(o) for o in outs]
    return Pipe(split, num_stages, modules)


def _orig_name(node):
    # split_module names a partition's placeholders after the producing node
    return node.name
