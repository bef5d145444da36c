"""ember._dynamo: graph capture for ``ember.compile`` (torch._dynamo's names).

Capture is lazy (DESIGN.md decision 4): the user's Python runs on every call while a
capture mode records tensor operations; pending operations become a graph when Python
needs a value or the function returns, and the graph's structural key finds its compiled
artifact.  See `ember._dynamo.session` for the runtime, `ember._dynamo.graph_key` for keys
and guards, `ember._dynamo.cache` for recompiles and automatic dynamic shapes.
"""
from ..nn.modules.module import Module as _Module
from . import config  # noqa: F401
from .backends import list_backends, lookup_backend, register_backend  # noqa: F401
from .eval_frame import (OptimizedModule, _module_compile, disable, graph_break,  # noqa: F401
                         is_compiling, mark_dynamic, mark_static, maybe_mark_dynamic, optimize,
                         reset, set_stance)
from .eval_frame import compile as _compile  # noqa: F401
from .exc import Unsupported  # noqa: F401
from .explain import explain  # noqa: F401

__all__ = ["optimize", "reset", "disable", "explain", "list_backends", "register_backend",
           "mark_dynamic", "mark_static", "maybe_mark_dynamic", "is_compiling", "config",
           "OptimizedModule", "allow_in_graph", "assume_constant_result", "graph_break",
           "set_stance", "Unsupported", "mark_static_address"]


def allow_in_graph(fn):
    """torch's hint to put ``fn`` in the graph as one call.  ember's capture records the
    operators ``fn`` runs whatever it is, so ``fn`` is returned unchanged."""
    return fn


def assume_constant_result(fn):
    """torch's hint that ``fn``'s result is a constant.  ember runs the user's Python on
    every call, so ``fn`` runs and is returned unchanged: its result is always right."""
    return fn


def mark_static_address(t, guard=False):
    """torch's hint that ``t`` keeps its memory address across calls (for CUDA graphs).
    ember records no CUDA graphs and reads every tensor as a graph input, so there is
    nothing to do; ``t`` must still be a tensor."""
    from .._core.tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static_address expects a Tensor, got {type(t).__name__}")


_Module.compile = _module_compile
