"""The dropout primitives.

Plain dropout is one fused primitive (draws the mask and scales in one kernel; the
mask, already divided by 1 - p, is a non-differentiable second output reused by
the derivative); ``_dropout_mask`` draws a mask of any shape for the feature and alpha
variants.  Masks come from ember's default generator; under vmap each example draws
its own (randomness='different').
"""
import numpy as np

from ..._core import meta as _meta
from ..._core import random as _rnd
from ..._core.op import Op
from ._rules import random_rule
from .. import random_streams as _rs

__all__ = []


def _keep(shape, p, dt):
    # torch's dropout mask is bernoulli_(1 - p): one double uniform per element
    return _rs.bernoulli_scalar(_rnd.default_generator, int(np.prod(shape)), 1 - p).reshape(
        shape)


def _dropout_kernel(xp, x, p):
    # the generator draws on the host: the mask moves to the input's backend
    mask = xp.asarray(_keep(x.shape, p, x.dtype)).astype(x.dtype)
    if p != 1:
        mask /= x.dtype.type(1 - p)  # torch divides the mask by 1 - p (not times 1 / (1 - p))
    return x * mask, mask


def _dropout_vjp(ctx, g, x, p):
    return g[0] * ctx.out[1]


# category "random": passes that must not merge, drop, fold or decompose a draw know it so
DROPOUT = Op("native_dropout", _dropout_kernel, _dropout_vjp, save_inputs=False,
             save_output=(1,), n_out=2, nondiff_outputs=(1,), category="random",
             shape=lambda x, p: (_meta.same(x), _meta.same(x)), batch=random_rule)


def _mask_kernel(xp, x, p, shape):
    return xp.asarray(_keep(shape, p, x.dtype)).astype(x.dtype)


DROPOUT_MASK = Op("_dropout_mask", _mask_kernel, None, differentiable=False, category="random",
                  shape=lambda x, p, shape: (tuple(shape), x.dtype), batch=random_rule)


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "native_dropout")
