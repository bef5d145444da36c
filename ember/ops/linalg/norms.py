"""The numerical-rank operator ``linalg_matrix_rank``: counts singular values (or absolute
eigenvalues) above pinv's tolerance.  ``linalg.matrix_rank`` is in ember.linalg.norms."""
import numpy as np

from ..._core import dtype as _dt
from ..._core.op import Op
from .._batching import _leading_rule
from .solve import _tols

__all__ = ["RANK"]


def _rank_kernel(xp, s, smax, atol, rtol, m, n):
    # ``s``: singular values (or |eigenvalues|); the tolerance follows pinv's rules
    fake = xp.zeros(s.shape[:-1] + (m, n), s.dtype)
    tol = _tols(fake, smax, atol, rtol)
    return xp.asarray((s > xp.asarray(tol)[..., None]).sum(-1), dtype=np.int64)


# the values and their maximum have different ranks: the batch goes in front, unpadded
RANK = Op("linalg_matrix_rank", _rank_kernel, None, differentiable=False, category="linalg",
          batch=_leading_rule, shape=lambda s, smax, atol, rtol, m, n: (s.shape[:-1], _dt.int64))
