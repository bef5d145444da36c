"""``ember._dynamo.explain(fn)(*args)``: what compiling ``fn`` captures, without changing it."""
import dataclasses

__all__ = ["explain", "ExplainOutput"]


@dataclasses.dataclass
class ExplainOutput:
    """Graphs, graph breaks and their reasons (with the user's file:line), ops per graph."""
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
            lines.append(f"  Break Reason {i}:\n    Reason: {r}")
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Ops {i}:")
            lines.extend(f"    {o}" for o in ops)
        lines.append("Out Guards:")
        lines.extend(f"  {g}" for g in self.out_guards)
        return "\n".join(lines)


class _Collector:
    def __init__(self):
        self.graphs = []
        self.break_reasons = []


def explain(f, *extra_args, **extra_kwargs):
    """``explain(f)(*args, **kwargs)`` runs ``f`` compiled with a fresh cache (the "eager"
    backend) and reports every graph and graph break."""
    from .eval_frame import CompiledFunction

    def inner(*args, **kwargs):
        collector = _Collector()
        cf = CompiledFunction(f, backend="eager")
        cf._run(args, kwargs, explain=collector)
        ops = [[str(n.target) for n in g.graph.nodes if n.op == "call_function"]
               for g in collector.graphs]
        guards = []
        for g in collector.graphs:
            for n in g.graph.nodes:
                if n.op == "placeholder":
                    guards.append(f"{n.name}: {n.meta.get('val')!r}, "
                                  f"requires_grad={n.meta.get('requires_grad', False)}")
        return ExplainOutput(collector.graphs, len(collector.graphs),
                             len(collector.break_reasons), collector.break_reasons,
                             sum(len(o) for o in ops), ops, guards)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
