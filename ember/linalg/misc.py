"""Matrix functions and products: matrix_power, matrix_exp, multi_dot, cross, vecdot,
vander, diagonal, matmul."""
from .._core.dispatch import apply, overridable
from ..ops import blas as _blas
from ..ops.blas import matmul as _matmul
from ..ops.creation import eye, ones as _ones
from ..ops.linalg.misc import EXPM
from ..ops.shape import cat
from ..ops.views import diagonal as _diagonal
from ._common import check_float, check_square
from .solve import _out, inv

__all__ = ["matrix_power", "matrix_exp", "multi_dot", "cross", "vecdot", "vander", "diagonal",
           "matmul"]


@overridable
def matrix_power(A, n, *, out=None):
    """Computes the n-th power of a square matrix for an integer n."""
    check_square("linalg.matrix_power", A)
    if n == 0:
        # connected to A (zero gradient) like torch's
        return _out(A * 0 + eye(A.shape[-1], dtype=A.dtype, device=A.device), out)
    if n < 0:
        check_float("linalg.inv", A)
        A, n = inv(A), -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else _matmul(result, base)
        n >>= 1
        if n:
            base = _matmul(base, base)
    return _out(result, out)


@overridable
def matrix_exp(A):
    """Computes the matrix exponential of a square matrix."""
    check_square("linalg.matrix_exp", A)
    check_float("linalg.matrix_exp", A)
    return apply(EXPM, (A,), {})


def _chain_order(dims):
    # classic O(n^3) dynamic programme for the cheapest parenthesisation
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = float("inf")
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


@overridable
def multi_dot(tensors, *, out=None):
    """Efficiently multiplies two or more matrices in the cheapest order."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{ts[-1].ndim}D")
    for i, t in enumerate(ts[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].shape[-1] != ts[i + 1].shape[0]:
            a, b = ts[i].shape, ts[i + 1].shape
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(a)} and {list(b)} cannot be multiplied")
    dims = [t.shape[0] for t in ts] + [ts[-1].shape[1]]
    split = _chain_order(dims)

    def build(i, j):
        if i == j:
            return ts[i]
        k = split[i][j]
        return _matmul(build(i, k), build(k + 1, j))
    r = build(0, len(ts) - 1)
    if first_1d:
        r = r.squeeze(0)
    if last_1d:
        r = r.squeeze(-1)
    return _out(r, out)


@overridable
def cross(input, other, *, dim=-1, out=None):
    """Computes the cross product of two 3-dimensional vectors."""
    return _blas.cross(input, other, dim=dim, out=out)


@overridable
def vecdot(x, y, *, dim=-1, out=None):
    """Computes the dot product of two batches of vectors along a dimension."""
    xc = x.conj() if x.is_complex() else x
    return _out((xc * y).sum(dim), out)


@overridable
def vander(x, *, N=None):
    """Generates a Vandermonde matrix with increasing powers x^0, x^1, ..., x^(N-1)."""
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n < 1:
        raise RuntimeError("N must be greater than 1.")
    ones = _ones(*x.shape, 1, dtype=x.dtype, device=x.device)
    if n == 1:
        return ones if not x.requires_grad else ones + x.unsqueeze(-1) * 0
    return cat([ones, x.unsqueeze(-1).expand(*x.shape, n - 1)], -1).cumprod(-1)


@overridable
def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """Alias of ``torch.diagonal`` with defaults dim1=-2, dim2=-1."""
    return _diagonal(A, offset, dim1, dim2)


@overridable
def matmul(input, other, *, out=None):
    """Alias of ``torch.matmul``."""
    return _matmul(input, other, out=out)
