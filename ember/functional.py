"""``torch.functional``: the module torch defines these tensor functions in (code imports
them from it, e.g. ``from torch.functional import einsum``); each is ember's own."""
from ._lowrank import pca_lowrank, svd_lowrank
from .linalg.lapack_legacy import lu
from .ops.blas import cdist, chain_matmul, einsum, tensordot
from .ops.misc import block_diag, unravel_index
from .ops.reduction import norm
from .ops.shape import (atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, broadcast_tensors,
                        cartesian_prod, meshgrid, split)
from .ops.sorting import unique, unique_consecutive
from .ops.spectral import istft, stft

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu",
           "norm", "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot",
           "unique", "unique_consecutive", "unravel_index"]
