"""ember.sparse: sparse COO tensors and the operations on them (``torch.sparse``).

Sparse tensors are made with `ember.sparse_coo_tensor` or ``Tensor.to_sparse()``;
``sparse @ dense``, `mm`, `ember.spmm`, `addmm` and `sum` compute from indices and
values with ember operators, so gradients flow to the dense operand (and to the values).
The CSR/CSC/BSR layouts and semi-structured sparsity come with the sparsity issue.
"""
from .._core import dtype as _dt
from .._core.dispatch import overridable
from ._coo import SparseCOOTensor, sparse_coo_tensor, to_sparse  # noqa: F401
from ._coo import _mm, _sum

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax"]


@overridable
def mm(mat1, mat2, *, reduce=None):
    """Matrix product of a sparse matrix ``mat1`` and a dense (or sparse) ``mat2``."""
    if reduce is not None:
        raise NotImplementedError("sparse.mm(reduce=...) is not supported")
    return _mm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with sparse ``mat1``."""
    return beta * mat + alpha * _mm(mat1, mat2)


def sum(input, dim=None, dtype=None):
    """Sums a sparse tensor over ``dim`` (all dimensions by default)."""
    if dim is None:
        return _sum(input, None, dtype=dtype)
    return _sum(input, dim, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    """Softmax over the specified (nonzero) entries of a sparse tensor along ``dim``:
    unspecified entries count as -inf, so they stay zero."""
    return _masked_softmax(input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax over the specified entries of a sparse tensor along ``dim``."""
    return _masked_softmax(input, dim, dtype, log=True)


def _masked_softmax(input, dim, dtype, log):
    from .. import ops
    s = input.coalesce()
    dense = s.to_dense() if dtype is None else s.to_dense().to(dtype)
    present = ops.zeros(tuple(s.shape), dtype=_dt.bool)
    present[tuple(s._sp_indices[i] for i in range(s.sparse_dim()))] = True
    masked = dense.masked_fill(~present, float("-inf"))
    r = masked.log_softmax(dim) if log else masked.softmax(dim)
    picked = r[tuple(s._sp_indices[i] for i in range(s.sparse_dim()))]
    from ._coo import _make
    return _make(s._sp_indices, picked, s.shape, True)


@overridable
def spmm(input, mat2):
    """Matrix product where ``input`` may be sparse (``torch.spmm``); dense operands use mm."""
    from .. import ops
    return ops.mm(input, mat2)


@overridable
def smm(input, mat):
    """Product of sparse ``input`` and dense ``mat``, as a sparse tensor (``torch.smm``)."""
    return _mm(input, mat).to_sparse()
