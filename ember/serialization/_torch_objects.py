"""Values torch pickles that are not plain tensors: per-tensor quantized tensors
(``torch._utils._rebuild_qtensor``) and TorchScript custom-class objects
(``torch.ScriptObject``, e.g. the packed weights of dynamically quantized modules).

ember has no quantized tensor type or TorchScript runtime; these records carry exactly
what the checkpoint holds, so a state dict saves to torch's bytes and loads back, and
the modules that own them convert records to and from their own representation.
"""
import pickle

QINT_STORAGES = {"int8": "QInt8Storage", "uint8": "QUInt8Storage", "int32": "QInt32Storage"}
PER_TENSOR_AFFINE = "per_tensor_affine"


class QuantizedTensorRecord:
    """A per-tensor affine quantized tensor: its integer values (an int8/uint8/int32
    tensor), scale and zero point."""
    __slots__ = ("int_repr", "scale", "zero_point")

    def __init__(self, int_repr, scale, zero_point):
        self.int_repr, self.scale, self.zero_point = int_repr, float(scale), int(zero_point)


class ScriptObjectRecord:
    """A TorchScript custom-class object: its qualified class name and the value of its
    ``__getstate__`` (what torch pickles as ``ScriptObject`` + BUILD)."""

    def __init__(self, qualified_name=None, state=None):
        self.qualified_name, self.state = qualified_name, state

    def __setstate__(self, value):
        if type(value) is not tuple or len(value) != 2 or type(value[1]) is not str:
            raise pickle.UnpicklingError("a ScriptObject's state is (state, qualified class name)")
        self.state, self.qualified_name = value


class _QScheme:
    """``torch.per_tensor_affine`` as read from a checkpoint."""

    def __init__(self, name):
        self.name = name


QSCHEMES = {name: _QScheme(name) for name in (PER_TENSOR_AFFINE, "per_channel_affine",
                                              "per_tensor_symmetric", "per_channel_symmetric",
                                              "per_channel_affine_float_qparams")}


def rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad,
                    backward_hooks=None):
    """torch._utils._rebuild_qtensor for per-tensor affine tensors."""
    from ._rebuild import _finish, _view
    if type(quantizer_params) is not tuple or not quantizer_params or \
            quantizer_params[0] is not QSCHEMES[PER_TENSOR_AFFINE]:
        scheme = quantizer_params[0] if type(quantizer_params) is tuple and quantizer_params \
            else quantizer_params
        raise RuntimeError(f"This checkpoint contains quantized tensors with scheme "
                           f"{getattr(scheme, 'name', scheme)!r:.60}; ember loads per-tensor "
                           f"affine ones only")
    if len(quantizer_params) != 3 or type(quantizer_params[1]) is not float or \
            type(quantizer_params[2]) is not int:
        raise pickle.UnpicklingError("per_tensor_affine parameters are (scheme, scale, zero_point)")
    if not getattr(storage, "quantized", False):
        raise pickle.UnpicklingError("_rebuild_qtensor needs a quantized storage (QInt8Storage)")
    ints = _finish(_view(storage, storage.dtype, storage_offset, size, stride), False, None)
    return QuantizedTensorRecord(ints, quantizer_params[1], quantizer_params[2])
