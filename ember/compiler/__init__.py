"""``ember.compiler``: the public controls of ember.compile (``torch.compiler``)."""
from .._dynamo import (allow_in_graph, assume_constant_result, disable,  # noqa: F401
                       is_compiling, list_backends, reset)
from .._dynamo.eval_frame import compile  # noqa: F401

__all__ = ["compile", "reset", "allow_in_graph", "assume_constant_result", "list_backends",
           "disable", "is_compiling", "is_dynamo_compiling"]


def is_dynamo_compiling():
    """True while code runs inside a compiled region."""
    return is_compiling()
