"""Converting convolution weights to a memory format (``torch.nn.utils.memory_format``)."""
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone().contiguous(
            memory_format=memory_format)
        if module.weight.grad is not None:
            module.weight.grad.data = module.weight.grad.detach().contiguous(
                memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Lay out the weight of every Conv2d/ConvTranspose2d in ``module`` (recursively) in
    ``memory_format`` (e.g. ``channels_last``); returns ``module``."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Lay out the weight of every Conv3d/ConvTranspose3d in ``module`` (recursively) in
    ``memory_format`` (e.g. ``channels_last_3d``); returns ``module``."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
