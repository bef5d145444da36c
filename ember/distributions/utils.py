"""Helpers shared by the distributions (torch.distributions.utils)."""
from functools import update_wrapper
from numbers import Number

from . import _ember as ember
from ember._core.tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Broadcasts numbers and tensors to one shape: numbers become tensors of the dtype of
    the tensors among ``values`` (the default dtype when there are none)."""
    if not all(isinstance(v, (Tensor, Number)) or hasattr(v, "__ember_function__")
               or hasattr(v, "__torch_function__") for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        dtype = like.dtype if like is not None else ember.get_default_dtype()
        values = [v if isinstance(v, Tensor) else ember.tensor(v, dtype=dtype) for v in values]
    shape = ember.broadcast_shapes(*[tuple(v.shape) for v in values])
    # tensors that already have the broadcast shape are returned as they are (so that
    # ``Normal(loc, scale).loc is loc``, as in torch)
    return tuple(v if tuple(v.shape) == tuple(shape) else v.expand(shape) for v in values)


def _standard_normal(shape, dtype, device):
    return ember.randn(shape, dtype=dtype)


def _sum_rightmost(value, dim):
    """Sums out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from logits: sigmoid for binary, softmax over the last dim otherwise."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamps probabilities into the open interval (0, 1) by the dtype's eps."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Logits from probabilities: log-odds for binary, log-probabilities otherwise."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:
    """A property computed once per instance on first access and then stored as an
    attribute (so that parameters derived from each other are computed only when used)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class: also a property, for documentation."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (offset ``diag``) of the trailing matrices, row by row."""
    n = mat.shape[-1]
    if not isinstance(n, int) or (n != mat.shape[-2]):
        raise ValueError(f"tril_matrix_to_vec expects square matrices, got shape "
                         f"{tuple(mat.shape)}")
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = ember.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of `tril_matrix_to_vec`: a lower-triangular matrix from its entries."""
    m = vec.shape[-1]
    # the matrix size n: the positive root of the count of entries on and below ``diag``
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
         ** 0.5) / 2
    eps = ember.finfo(vec.dtype).eps
    if not abs(round(n) - n) < eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    rows, cols = ember.tril_indices(n, n, offset=diag)
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    return _scatter_tril(mat, vec, rows, cols, n)


def _scatter_tril(mat, vec, rows, cols, n):
    flat = rows * n + cols
    out = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    idx = flat.expand(tuple(vec.shape[:-1]) + (flat.shape[-1],))
    out = out.scatter(-1, idx, vec)
    return out.reshape(mat.shape)
