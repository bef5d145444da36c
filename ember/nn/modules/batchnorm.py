"""``torch.nn.modules.batchnorm``: the batch-norm modules, importable by torch's path."""
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d  # noqa: F401

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
try:  # added by the distributed helpers' area
    from .syncbatchnorm import SyncBatchNorm  # noqa: F401
    __all__.append("SyncBatchNorm")
except ImportError:  # pragma: no cover
    pass
