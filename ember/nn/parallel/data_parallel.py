"""DataParallel: single-process, multi-device data parallelism (``torch.nn.parallel``).

ember runs on the host: as torch does on a machine without GPUs, DataParallel is a
transparent wrapper that calls the module directly (state_dict keys still carry the
``module.`` prefix), and `data_parallel` applies the module to the inputs."""
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Implements data parallelism at the module level.

    Without accelerators the module runs as is on the CPU (``device_ids`` is then empty,
    like torch's); use DistributedDataParallel to train on several processes."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.dim = dim
        self.output_device = None
        self.src_device_obj = None

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """Evaluates ``module(*inputs)`` in parallel across ``device_ids``; on the CPU this
    is one call of ``module``."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))
