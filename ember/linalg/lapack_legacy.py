"""torch's LAPACK-style top-level functions: ``lu``, ``lu_solve``, ``geqrf``, ``orgqr``,
``ormqr`` and their Tensor methods, over ``ember.linalg``.  ``ember/__init__.py``
re-exports this module's ``__all__``."""
import warnings

import numpy as np

from .._core.dispatch import overridable
from .._core.tensor import Tensor, host_tensor
from ..autograd.function import Function
from ..ops import _return_types as _rt
from ..ops.blas import _warn_once
from ..ops.creation import zeros
from ..ops.shape import cat
from ._common import write_outs
from .decompositions import householder_product, lu_factor_ex
from .solve import lu_solve as _linalg_lu_solve

__all__ = ["lu", "lu_solve", "geqrf", "orgqr", "ormqr"]

geqrf_t = _rt.structseq("geqrf", ("a", "tau"))


@overridable
def lu(A, pivot=True, get_infos=False, out=None):
    """Computes the LU factorization of a matrix or batches of matrices ``A``: ``(A_LU,
    pivots)``, with ``infos`` too if ``get_infos``.  Deprecated in favor of
    ``torch.linalg.lu_factor``."""
    _warn_once("lu", "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
               "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
               "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\n"
               "LU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
               "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\nshould be "
               "replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, compute_pivots)")
    # a singular matrix is not an error of the factorization (its info says so)
    LU, pivots, infos = lu_factor_ex(A, pivot=pivot)
    res = (LU, pivots, infos) if get_infos else (LU, pivots)
    if out is not None:
        for o, r in zip(out, res):
            o.resize_(r.shape).copy_(r)
        return out
    return res


@overridable
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Returns the LU solve of the linear system ``Ax = b`` using the partially pivoted LU
    factorization of A from ``lu``.  Deprecated in favor of ``torch.linalg.lu_solve``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _linalg_lu_solve(LU_data, LU_pivots, b, out=out)


class _Geqrf(Function):
    """geqrf has no derivative in torch: its outputs record a backward that says so."""

    @staticmethod
    def forward(ctx, input):
        return _geqrf(input)

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _geqrf(input):
    data = input.detach().numpy()
    m, n = data.shape[-2:]
    if data.size:
        h, tau = np.linalg.qr(data, mode="raw")  # LAPACK's (column-major) output
        a = np.ascontiguousarray(np.swapaxes(h, -1, -2))
    else:
        a, tau = data.copy(), np.zeros(data.shape[:-2] + (min(m, n),), data.dtype)
    return (host_tensor(a.astype(data.dtype, copy=False), input),
            host_tensor(np.asarray(tau).astype(data.dtype, copy=False), input))


@overridable
def geqrf(input, *, out=None):
    """A low-level function for calling LAPACK's geqrf directly: ``(a, tau)``, R on and
    above the diagonal of ``a``, the Householder vectors below it (implicit unit diagonal),
    and their scaling factors ``tau``."""
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: The input tensor A must have at least 2 dimensions.")
    res = _Geqrf.apply(input) if input.requires_grad else _geqrf(input)
    return write_outs("geqrf", 1, out, tuple(res), geqrf_t)


@overridable
def orgqr(input, tau):
    """Computes the first n columns of a product of Householder matrices (an alias of
    ``torch.linalg.householder_product``)."""
    return householder_product(input, tau)


def _full_q(input, tau):
    """The square product of all the reflectors of ``(input, tau)``."""
    mn, k = input.shape[-2], input.shape[-1]
    if k < mn:  # reflectors with tau = 0 are the identity: pad to a square product
        lead = tuple(input.shape[:-2])
        input = cat((input, zeros(lead + (mn, mn - k), dtype=input.dtype)), -1)
        tau = cat((tau, zeros(lead + (mn - tau.shape[-1],), dtype=tau.dtype)), -1)
    return householder_product(input[..., :mn], tau)


@overridable
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Computes the matrix-matrix multiplication of a product of Householder matrices with a
    general matrix: ``op(Q) @ other`` (``left``) or ``other @ op(Q)``, where ``op`` is the
    conjugate transpose if ``transpose``."""
    if input.dim() < 2 or other.dim() < 2:
        raise RuntimeError("torch.ormqr: input and other must have at least 2 dimensions.")
    mn = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != mn:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to "
                           f"input.shape[-2]")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError("torch.ormqr: tau.shape[-1] must be less than or equal to "
                           "input.shape[-1]")
    q = _full_q(input, tau)
    if transpose:
        q = q.mH
    r = q @ other if left else other @ q
    if out is not None:
        from .._core.dispatch import write_out
        return write_out(out, r)
    return r


Tensor.lu = lu
Tensor.lu_solve = lu_solve
Tensor.geqrf = geqrf
Tensor.orgqr = orgqr
Tensor.ormqr = ormqr
