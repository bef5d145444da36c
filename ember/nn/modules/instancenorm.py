"""``torch.nn.modules.instancenorm``: the instance-norm modules, by torch's path."""
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
