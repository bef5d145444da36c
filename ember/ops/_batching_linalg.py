"""Batching rules for nn primitives (linalg and fft ones are their
ops' ``batch`` fields, in ember/ops/linalg and ember/ops/fft).

Most of these kernels already batch over leading dimensions, so the vmap batch
becomes one more leading dimension; conv/pool primitives fold it into N.
"""
from .._core.tensor import Tensor
from ._batching import (BATCH_RULES, _batched_front, _dims_rule, _elementwise_rule,  # noqa: F401
                       _front_padded, _leading_padded_rule, _leading_rule, _logical_ndim,
                       _move_to_front, _outs_bdims, _unbatched_empties, add_batch_rule,
                       current_mode)


