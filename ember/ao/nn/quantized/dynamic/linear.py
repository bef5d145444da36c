"""Dynamically quantized Linear (``torch.ao.nn.quantized.dynamic.Linear``)."""
import numpy as np

from .... import _qscheme
from ....._core import dtype as _dt
from .....nn.modules.module import Module
from .....nn.modules.linear import Linear as _FloatLinear, NonDynamicallyQuantizableLinear
from .....ops import from_numpy, zeros
from .._packed import PackedLinearWeight

__all__ = ["Linear", "LinearPackedParams"]

_SUPPORTED = (_dt.qint8, _dt.float16)


def _check_dtype(dtype, what):
    if dtype not in _SUPPORTED:
        raise RuntimeError(f"Unsupported dtype specified for dynamic quantized {what}: {dtype}")


class LinearPackedParams(Module):
    """Holds a dynamic Linear's packed weight and bias; its state-dict entries are
    ``dtype`` and ``_packed_params`` (the int8 weight, its scale and zero point, the bias)."""
    _version = 3

    def __init__(self, dtype=_dt.qint8):
        super().__init__()
        self.dtype = dtype
        self._packed = None

    def set_weight_bias(self, weight, bias):
        """Pack ``weight`` (a QuantizedTensor for qint8, a float tensor for float16)."""
        if self.dtype is _dt.qint8:
            self._packed = PackedLinearWeight(self.dtype, weight._int, weight.q_scale(),
                                              weight.q_zero_point(), bias)
        else:
            self._packed = PackedLinearWeight(self.dtype, weight.detach().half(), 1.0, 0, bias)

    def _weight_bias(self):
        return self._packed.quantized_weight(), self._packed.bias

    @property
    def _packed_params(self):
        return self._packed.to_state()

    def forward(self, x):
        return x

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._packed.to_state()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("dtype", "_packed_params"):
            if prefix + name not in state_dict:
                missing_keys.append(prefix + name)
        if prefix + "dtype" in state_dict and prefix + "_packed_params" in state_dict:
            self.dtype = state_dict.pop(prefix + "dtype")
            self._packed = PackedLinearWeight.from_state(
                self.dtype, state_dict.pop(prefix + "_packed_params"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    def __repr__(self):
        return repr(self._weight_bias())


class Linear(Module):
    r"""A dynamic quantized linear module with floating point tensors as inputs and outputs:
    the weight is stored quantized (qint8, per tensor) or in float16, and each call quantizes
    its input to quint8 from the input's own range, multiplies with integer arithmetic and
    returns float32 (``torch.ao.nn.quantized.dynamic.Linear``)."""
    _version = 4
    _FLOAT_MODULE = _FloatLinear

    def __init__(self, in_features, out_features, bias_=True, dtype=_dt.qint8):
        super().__init__()
        _check_dtype(dtype, "linear")
        self.in_features = in_features
        self.out_features = out_features
        self.scale = 1.0
        self.zero_point = 0
        self.version = 4
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params._packed = PackedLinearWeight(
            dtype,
            zeros((out_features, in_features), dtype=_dt.int8 if dtype is _dt.qint8 else
                  _dt.float16), 1.0, 0, zeros(out_features) if bias_ else None)

    def _get_name(self):
        return "DynamicQuantizedLinear"

    def __repr__(self):
        # the packed parameters are not shown as a child, as in torch
        return f"{self._get_name()}({self.extra_repr()})"

    def extra_repr(self):
        dtype = self._packed_params.dtype
        s = (f"in_features={self.in_features}, out_features={self.out_features}, "
             f"dtype={dtype}")
        if dtype is _dt.qint8:
            s += f", qscheme={_qscheme.per_tensor_affine}"
        return s

    def forward(self, x):
        if x.dim() < 2:
            raise RuntimeError("The dimension of input tensor should be larger than or equal "
                               "to 2")
        if x.shape[-1] != self.in_features:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({int(np.prod(x.shape[:-1]))}x{x.shape[-1]} and "
                               f"{self.in_features}x{self.out_features})")
        reduce_range = self.version is None or self.version >= 4
        out = self._packed_params._packed.apply(x.detach().numpy(), reduce_range)
        return from_numpy(np.ascontiguousarray(out, dtype=np.float32))

    def weight(self):
        return self._packed_params._weight_bias()[0]

    def bias(self):
        return self._packed_params._weight_bias()[1]

    def _weight_bias(self):
        return self._packed_params._weight_bias()

    def set_weight_bias(self, w, b):
        self._packed_params.set_weight_bias(w, b)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = from_numpy(np.array(self.scale, dtype=np.float32))
        destination[prefix + "zero_point"] = from_numpy(np.array(self.zero_point, dtype=np.int64))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("scale", "zero_point"):
            if prefix + name in state_dict:
                setattr(self, name, type(getattr(self, name))(state_dict.pop(prefix + name)))
            elif strict:
                missing_keys.append(prefix + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """Create a dynamic quantized Linear from a float ``nn.Linear`` carrying a ``qconfig``
        (its weight observer chooses the weight's qparams)."""
        float_modules = [_FloatLinear, NonDynamicallyQuantizableLinear]
        if type(mod) not in float_modules:
            raise AssertionError("nn.quantized.dynamic.Linear.from_float only works for one of"
                                 + str([m.__name__ for m in float_modules])
                                 + f", got {type(mod)}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer = mod.qconfig.weight()
        else:
            from ....quantization.qconfig import default_dynamic_qconfig
            weight_observer = default_dynamic_qconfig.weight()
        dtype = weight_observer.dtype
        if dtype not in _SUPPORTED:
            raise AssertionError(f"The only supported dtypes for dynamic quantized linear are "
                                 f"qint8 and float16, got: {dtype}")
        q = cls(mod.in_features, mod.out_features, bias_=mod.bias is not None, dtype=dtype)
        q._packed_params._packed = PackedLinearWeight.from_float(
            mod.weight, mod.bias, dtype, None if dtype is _dt.float16 else weight_observer)
        return q
