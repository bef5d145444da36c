"""``ember.compiler``: the public controls of ember.compile (``torch.compiler``)."""
from .._dynamo import (allow_in_graph, assume_constant_result, disable,  # noqa: F401
                       is_compiling, list_backends, reset, set_stance)
from .._dynamo.eval_frame import compile  # noqa: F401

__all__ = ["compile", "reset", "allow_in_graph", "assume_constant_result", "list_backends",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "set_stance",
           "cudagraph_mark_step_begin"]


def is_dynamo_compiling():
    """True while code runs inside a compiled region."""
    return is_compiling()


def is_exporting():
    """False: ember has no export, so no code ever runs inside one."""
    return False


def cudagraph_mark_step_begin():
    """Nothing to do: ember records no CUDA graphs (torch's ``mode="reduce-overhead"``
    marks a training step's start with this)."""
