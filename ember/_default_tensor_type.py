"""``torch.set_default_tensor_type``: the pre-2.1 spelling of ``set_default_dtype`` (and of
``set_default_device`` for the ``torch.cuda.*Tensor`` types)."""
import importlib
import warnings

from ._core.dtype import set_default_dtype
from .ops.legacy_tensors import tensortype

__all__ = ["set_default_tensor_type"]


def _resolve(name):
    module, _, attr = name.rpartition(".")
    if module.split(".")[0] == "torch":  # programs name the types under torch
        module = "ember" + module[len("torch"):]
    if module.endswith(".cuda"):
        raise TypeError(f"type {name} not available. Torch not compiled with CUDA enabled.")
    return getattr(importlib.import_module(module), attr)


def set_default_tensor_type(t, /):
    """Sets the default ``torch.Tensor`` type to floating point tensor type ``t`` (a typed
    tensor class such as ``torch.DoubleTensor``, or its name); its dtype becomes the default
    floating point dtype.  Deprecated: use ``set_default_dtype``."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        t = _resolve(t)
    if not isinstance(t, tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(t.dtype)
