"""The table of ONNX lowerings: op name -> function writing the op's ONNX nodes.

A lowering is called as ``fn(b, ctx, *args, **params)``: ``b`` the `Builder`, ``ctx`` a
`LoweringContext` (the op's name, its output metadata, the opset), ``args`` the op's
positional inputs with graph values as `Value`s and Python numbers/None as they are, and
``params`` the op's params.  It returns the output's name, or a tuple of names (one per
output, None for an output it does not compute) for an op with several.
"""
import dataclasses

__all__ = ["LOWERINGS", "lowers", "LoweringContext"]

LOWERINGS = {}


@dataclasses.dataclass
class LoweringContext:
    name: str        # the ember op's name
    out: object      # its output metadata: a TensorMeta, or a tuple of them
    opset: int
    node: str = ""   # the graph node's name (for messages)


def lowers(*names):
    """Register the decorated function as the lowering of each op in ``names``."""
    def deco(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return deco
