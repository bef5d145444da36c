"""``torch.nn.modules.batchnorm``: the batch-norm modules, importable by torch's path."""
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, _BatchNorm,  # noqa: F401
                            _LazyNormBase, _NormBase)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d"]


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """A BatchNorm1d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """A BatchNorm2d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """A BatchNorm3d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm3d

try:  # added by the distributed helpers' area
    from .syncbatchnorm import SyncBatchNorm  # noqa: F401
    __all__.append("SyncBatchNorm")
except ImportError:  # pragma: no cover
    pass
