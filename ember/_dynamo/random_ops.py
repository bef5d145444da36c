"""Random operators in a compiled region: drawn in the eager order.

A draw from ember's default generator is a graph node (`Trace.can_draw`): its kernel reads
the generator when the graph runs, the graph's draws run in recorded order, and any other
use of the generator while the graph is pending runs it first (`ember._core.random.
ACCESS_HOOKS`), so the stream is consumed exactly as in eager mode, and a replayed call
(which skips the Python) draws too.  What cannot be a node is drawn here, at the call:
dropout inside a sub-graph (``cond``/``map`` bodies: its mask is drawn eagerly, only the
multiplication is captured) and dropout with a Generator of its own; any other such
operator ends the graph (a graph break) and runs eagerly.
"""
import numpy as np

from .._core.op import REGISTRY, Category
from .._core.tensor import wrap

__all__ = ["draws_random", "capture_draw"]

# operators whose kernels draw from a generator (their category is not always RANDOM)
RANDOM_NAMES = frozenset((
    "bernoulli", "bernoulli_scalar", "cauchy", "exponential", "geometric", "log_normal",
    "multinomial", "normal", "normal_tensor", "random", "randperm", "uniform",
    "_dropout_mask", "native_dropout", "rrelu_with_noise", "poisson", "standard_gamma",
    "distributions_binomial", "rand", "randn", "randint", "rand_like", "randn_like",
    "randint_like"))


def draws_random(op):
    return op.category is Category.RANDOM or op.name in RANDOM_NAMES


def _dummy(x):
    # the mask kernels read only the dtype of the tensor they are given
    return wrap(np.empty((0,), dtype=x.dtype.np))


def capture_draw(trace, op, args, params):
    """The result of random ``op``, its draw made now; None when the op is not handled."""
    name = op.name
    if name == "_dropout_mask":
        return REGISTRY["_dropout_mask"](_dummy(args[0]), **params)
    if name == "native_dropout":
        x = args[0]
        p = params["p"]
        mask = REGISTRY["_dropout_mask"](_dummy(x), p=p, shape=tuple(x.shape))
        if p != 1:  # as the fused kernel: the mask divided by 1 - p in its dtype
            m = mask._data
            m /= m.dtype.type(1 - p)
        return trace.record(REGISTRY["mul"], (x, mask), {}), mask
    return None
