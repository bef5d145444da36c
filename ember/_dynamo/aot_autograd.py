"""AOT autograd: the backward of a captured graph, captured too (placeholder, see below)."""
from .backends.pycode import python_runner
from .graph_build import build_graph_module

__all__ = ["compile_aot"]


def compile_aot(gm, example_inputs, backend, trace, spec):
    gm = build_graph_module(trace, spec, grad_nodes=True)
    return python_runner(gm), None
