"""Backends that count and record what ember.compile hands them (``torch._dynamo.testing``).

``CompileCounter`` counts compiled graphs (``frame_count``, torch's name: one per graph
the backend is asked to compile) and their operator nodes (``op_count``);
``CompileCounterWithBackend`` does the same and then compiles with a named backend;
``EagerAndRecordGraphs`` keeps every graph.  The graphs run through
`ember._dynamo.backends.pycode.python_runner`, which computes symbolic sizes from the
inputs: ``gm.forward`` would bake in the sizes of the first call.
"""
from .backends import lookup_backend
from .backends.pycode import python_runner

__all__ = ["CompileCounter", "CompileCounterWithBackend", "EagerAndRecordGraphs"]


def _count_ops(gm):
    return sum(1 for n in gm.graph.nodes if n.op.startswith("call"))


class CompileCounter:
    """A backend counting graphs (``frame_count``) and operator nodes (``op_count``)."""

    def __init__(self):
        self.clear()

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += _count_ops(gm)
        return python_runner(gm)

    def clear(self):
        self.frame_count = 0
        self.op_count = 0


class CompileCounterWithBackend:
    """`CompileCounter` that keeps the graphs (``graphs``) and compiles with ``backend``."""

    def __init__(self, backend):
        self.backend = backend
        self.clear()

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += _count_ops(gm)
        self.graphs.append(gm)
        return lookup_backend(self.backend)(gm, example_inputs)

    def clear(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []


class EagerAndRecordGraphs:
    """A backend keeping every graph it is given (``graphs``) and running it op by op."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return python_runner(gm)
