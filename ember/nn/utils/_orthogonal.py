"""``nn.utils.parametrizations.orthogonal``: a weight kept orthogonal (unitary) by
parametrizing it through the matrix exponential or the Cayley map of a skew-symmetric
matrix, or through a product of Householder reflections.

With ``use_trivialization`` (the default) the parametrization also keeps a ``base``
orthogonal matrix, set whenever the weight is assigned, and the weight is ``base`` times
the map of the stored original (dynamic trivialization); assigning an orthogonal matrix
stores ``-I`` as the original, the point every map sends to ``I`` (Householder: the signs
on the diagonal are the diagonal of the original).
"""
import enum

import numpy as np

from ..._core.tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...linalg import householder_product, matrix_exp, solve
from ...linalg.lapack_legacy import geqrf
from ...ops.blas import matmul
from ...ops.creation import eye, zeros_like
from ...ops.random import randn
from ...ops.shape import cat
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal"]


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


def _q_of_qr(A):
    """The Q of ``A = QR`` (``A`` tall) normalised so that R has a non-negative real
    diagonal."""
    X, tau = geqrf(A)
    Q = householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(Q):
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * _finfo_eps(Q)
    return bool((Q.mH @ Q).allclose(eye(k, dtype=Q.dtype, device=Q.device), atol=eps))


def _finfo_eps(t):
    return float(np.finfo(t.real.dtype.np if t.is_complex() else t.dtype.np).eps)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map is _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        wide = n < k
        if wide:
            X, n, k = X.mT, k, n
        if self.orthogonal_map is _OrthMaps.householder:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            # the signs of the original's diagonal choose each column's sign (not trained)
            Q = householder_product(A, tau) * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            X = X.tril()
            if n != k:  # a square skew matrix from the tall one, padded with zero columns
                pad = X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)
                X = cat([X, pad], dim=-1)
            A = X - X.mH
            if self.orthogonal_map is _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:  # the Cayley retraction (I + A/2)(I - A/2)^-1
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = solve(Id.add(A, alpha=-0.5), Id.add(A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        if self._buffers.get("base") is not None:
            Q = matmul(self.base, Q)
        return Q.mT if wide else Q

    def right_inverse(self, Q):
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if tuple(Q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        original = Q
        n, k = Q.shape[-2], Q.shape[-1]
        if n < k:
            Q, n, k = Q.mT, k, n
        if "base" not in self._buffers:
            if self.orthogonal_map is not _OrthMaps.householder:
                raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                          "or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            A, tau = geqrf(Q)
            # R's diagonal made positive: the signs sit on A's diagonal, flipped where LAPACK
            # used no reflection (tau == 0)
            d = A.diagonal(dim1=-2, dim2=-1)
            d.copy_(d.sign() * (1 - 2 * (tau == 0.0).to(d.dtype)))
            return A.mT if original.shape[-2] < original.shape[-1] else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _q_of_qr(Q)
        else:  # complete Q to a square orthogonal matrix
            N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _q_of_qr(cat([Q, N], dim=-1))
        self.base = Q
        neg_id = zeros_like(original)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Apply an orthogonal or unitary parametrization to a matrix or a batch of matrices:
    ``module.<name>`` stays orthogonal (unitary) through training.

    ``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or ``"householder"`` (default: the
    matrix exponential for square or complex matrices, Householder otherwise);
    ``use_trivialization``: keep a base matrix that assignments set (dynamic
    trivialization)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or \
            weight.is_complex() else "householder"
    kind = getattr(_OrthMaps, orthogonal_map, None)
    if kind is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrize.register_parametrization(
        module, name, _Orthogonal(weight, kind, use_trivialization=use_trivialization),
        unsafe=True)
    return module
