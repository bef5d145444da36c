"""``ember._dynamo.explain(fn)(*args)``: what compiling ``fn`` captures, without changing it.

The call runs ``fn`` once, compiled with a fresh cache and the "eager" backend, and
reports every graph (its operators and the inputs it is keyed on) and every graph break
(the reason and the user's file:line), with torch's field names.
"""
import dataclasses

__all__ = ["explain", "ExplainOutput", "GraphCompileReason"]


@dataclasses.dataclass
class GraphCompileReason:
    """Why a graph ended early: ``reason`` and ``user_stack`` (the user's ``file:line``)."""
    reason: str
    user_stack: list

    def __str__(self):
        where = self.user_stack[-1] if self.user_stack else "<unknown>"
        return f"{self.reason} at {where}"


@dataclasses.dataclass
class ExplainOutput:
    """Graphs, graph breaks and their reasons, operators per graph, the guards (the
    placeholders each graph is keyed on)."""
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list
    op_count: int
    ops_per_graph: list
    out_guards: list
    compile_times: str = ""

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, r in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {i}:\n    Reason: {r.reason}")
            lines.extend(f"    User Stack:\n      {s}" for s in r.user_stack)
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines.extend(f"    {getattr(o, 'name', o)}" for o in ops)
        lines.append("Out Guards:")
        lines.extend(f"  {g}" for g in self.out_guards)
        return "\n".join(lines)


class _Collector:
    """What the capture session reports to explain: graphs compiled, breaks."""

    def __init__(self):
        self.graphs = []
        self.break_reasons = []


def _reason(r):
    if isinstance(r, GraphCompileReason):
        return r
    if isinstance(r, tuple):
        return GraphCompileReason(r[0], [r[1]])
    reason, sep, where = str(r).rpartition(" at ")
    return GraphCompileReason(reason, [where]) if sep else GraphCompileReason(str(r), [])


def explain(f, *extra_args, **extra_kwargs):
    """``explain(f)(*args, **kwargs)`` runs ``f`` once compiled (fresh cache, "eager"
    backend) and returns an `ExplainOutput`; ``f`` may be a function, a method, a module
    or an already compiled function (its original is explained)."""
    from .eval_frame import CompiledFunction, OptimizedModule

    target = f
    if isinstance(target, OptimizedModule):
        target = target._orig_mod
    target = getattr(target, "_torchdynamo_orig_callable", target)

    def inner(*args, **kwargs):
        from ..nn.modules.module import Module
        collector = _Collector()
        if isinstance(target, Module):
            cf = CompiledFunction(target._call_impl, backend="eager", module=target)
        else:
            cf = CompiledFunction(target, backend="eager")
        cf._run(args, kwargs, explain=collector)
        ops = [[n.target for n in g.graph.nodes if n.op == "call_function"]
               for g in collector.graphs]
        guards = []
        for g in collector.graphs:
            for n in g.graph.nodes:
                if n.op == "placeholder":
                    guards.append(f"{n.name}: {n.meta.get('val')!r}, "
                                  f"requires_grad={n.meta.get('requires_grad', False)}")
        reasons = [_reason(r) for r in collector.break_reasons]
        return ExplainOutput(collector.graphs, len(collector.graphs), len(reasons), reasons,
                             sum(len(o) for o in ops), ops, guards)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
