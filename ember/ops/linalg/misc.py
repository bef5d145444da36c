"""The matrix exponential operator ``linalg_matrix_exp`` (scipy's Pade approximation), with
its derivative through the exponential of a block matrix.  ``linalg.matrix_exp`` is in
ember.linalg.misc."""
from ..._core.dispatch import apply
from ..._core.op import JVP_FROM_VJP, Op, mark_unsupported
from ..shape import cat
from ._batching import _linalg_rule

__all__ = ["EXPM"]


def _expm_kernel(xp, a):
    import scipy.linalg as sl
    if a.size == 0:
        return a.copy()
    return sl.expm(a).astype(a.dtype, copy=False)


def _expm_vjp(ctx, g, a):
    # d exp(A)^H g is the upper-right block of exp([[A^H, g], [0, A^H]])
    n = a.shape[-1]
    ah = a.mH
    top = cat([ah, g], -1)
    bottom = cat([g * 0, ah], -1)
    big = apply(EXPM, (cat([top, bottom], -2),), {})
    return big[..., :n, n:]


EXPM = Op("linalg_matrix_exp", _expm_kernel, _expm_vjp, category="linalg", batch=_linalg_rule,
          shape=lambda a: (a.shape, a.dtype))


# forward AD derives these operators' tangents from their vjps (no jvp rule written yet)
mark_unsupported("jvp", JVP_FROM_VJP, EXPM)
