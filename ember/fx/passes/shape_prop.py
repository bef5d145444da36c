"""`ShapeProp`: run a GraphModule on example inputs and store every tensor value's
shape, dtype, stride and requires_grad in ``node.meta['tensor_meta']``."""
from typing import Any, NamedTuple, Tuple

from ..._core.tensor import Tensor
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp", "extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: Tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict


def extract_tensor_metadata(t):
    """The TensorMetadata of tensor ``t``."""
    memory_format = "contiguous_format" if t.is_contiguous() else None
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, tuple(t.stride()),
                          memory_format, False, {})


class ShapeProp(Interpreter):
    """Run the module and record ``node.meta['tensor_meta']`` (a TensorMetadata, or a
    nested structure of them for tuple/list outputs) and ``node.meta['type']``."""

    def run_node(self, n):
        result = super().run_node(n)
        found = []

        def meta(x):
            if isinstance(x, Tensor):
                found.append(True)
                return extract_tensor_metadata(x)
            return x
        m = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = m
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run on ``args`` (example inputs) and return the output."""
        return super().run(*args)
