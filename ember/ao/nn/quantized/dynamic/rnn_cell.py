"""Dynamically quantized single-step cells: ``LSTMCell``, ``GRUCell``, ``RNNCell``
(``torch.ao.nn.quantized.dynamic``'s cells).  Both projections quantize their input per
call (the input and the hidden state each from their own range)."""
import numpy as np

from ....._core import dtype as _dt
from .....nn.modules.module import Module
from .....nn.modules.rnn import GRUCell as _FloatGRUCell, LSTMCell as _FloatLSTMCell, \
    RNNCell as _FloatRNNCell
from .....ops import from_numpy, zeros
from .._packed import PackedLinearWeight
from .rnn import _gru_step, _lstm_step

__all__ = ["RNNCellBase", "LSTMCell", "GRUCell", "RNNCell"]


class RNNCellBase(Module):
    """Base of the dynamically quantized cells: two packed weights (input-to-hidden and
    hidden-to-hidden, each with its bias), saved as ``_packed_weight_ih``/``_hh``."""

    def __init__(self, input_size, hidden_size, bias=True, num_chunks=4, dtype=_dt.qint8):
        super().__init__()
        if dtype not in (_dt.qint8, _dt.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_dtype = dtype
        rows = num_chunks * hidden_size
        wdtype = _dt.int8 if dtype is _dt.qint8 else _dt.float16
        # placeholders until weights are set (from_float or load_state_dict)
        self._packed_weight_ih = PackedLinearWeight(
            dtype, zeros((rows, input_size), dtype=wdtype), 1.0, 0, zeros(rows) if bias else None)
        self._packed_weight_hh = PackedLinearWeight(
            dtype, zeros((rows, hidden_size), dtype=wdtype), 1.0, 0, zeros(rows) if bias else None)

    def _get_name(self):
        return "DynamicQuantizedRNNBase"

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def check_forward_input(self, input):
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)}, "
                               f"expected {self.input_size}")

    def check_forward_hidden(self, input, hx, hidden_label=""):
        if input.size(0) != hx.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match "
                               f"hidden{hidden_label} batch size {hx.size(0)}")
        if hx.size(1) != self.hidden_size:
            raise RuntimeError(f"hidden{hidden_label} has inconsistent hidden_size: got "
                               f"{hx.size(1)}, expected {self.hidden_size}")

    def _zeros(self, input):
        return zeros((input.size(0), self.hidden_size), dtype=input.dtype)

    def _gates(self, input, h):
        """(input projection, hidden projection) as float32 arrays."""
        x = input.detach().numpy().astype(np.float32)
        h = h.detach().numpy().astype(np.float32)
        return self._packed_weight_ih.apply(x), self._packed_weight_hh.apply(h)

    def _weight_bias(self):
        return {"weight": {"weight_ih": self._packed_weight_ih.quantized_weight(),
                           "weight_hh": self._packed_weight_hh.quantized_weight()},
                "bias": {"bias_ih": self._packed_weight_ih.bias,
                         "bias_hh": self._packed_weight_hh.bias}}

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "_packed_weight_ih"] = self._packed_weight_ih.to_state()
        destination[prefix + "_packed_weight_hh"] = self._packed_weight_hh.to_state()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("_packed_weight_ih", "_packed_weight_hh"):
            if prefix + name in state_dict:
                setattr(self, name, PackedLinearWeight.from_state(
                    self.weight_dtype, state_dict.pop(prefix + name)))
            elif strict:
                missing_keys.append(prefix + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) not in {_FloatLSTMCell, _FloatGRUCell, _FloatRNNCell}:
            raise AssertionError("nn.quantized.dynamic.RNNCellBase.from_float only works for "
                                 "nn.LSTMCell, nn.GRUCell and nn.RNNCell")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if mod.qconfig is not None and mod.qconfig.weight is not None:
            weight_observer_method = mod.qconfig.weight
        else:
            from ....quantization.qconfig import default_dynamic_qconfig
            weight_observer_method = default_dynamic_qconfig.weight
        dtype = weight_observer_method().dtype
        if dtype not in (_dt.qint8, _dt.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        if type(mod) is _FloatLSTMCell:
            q = LSTMCell(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype)
        elif type(mod) is _FloatGRUCell:
            q = GRUCell(mod.input_size, mod.hidden_size, bias=mod.bias, dtype=dtype)
        else:
            q = RNNCell(mod.input_size, mod.hidden_size, bias=mod.bias,
                        nonlinearity=mod.nonlinearity, dtype=dtype)
        if not mod.bias:
            raise AssertionError("mod.bias must be True")

        def pack(weight, bias):
            observer = None if dtype is _dt.float16 else weight_observer_method()
            return PackedLinearWeight.from_float(weight, bias, dtype, observer)
        q._packed_weight_ih = pack(mod.weight_ih, mod.bias_ih)
        q._packed_weight_hh = pack(mod.weight_hh, mod.bias_hh)
        return q


class LSTMCell(RNNCellBase):
    r"""A long short-term memory (LSTM) cell with dynamically quantized weights; floating
    point inputs and outputs (``torch.ao.nn.quantized.dynamic.LSTMCell``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, num_chunks=4, **kwargs)

    def _get_name(self):
        return "DynamicQuantizedLSTMCell"

    def forward(self, input, hx=None):
        self.check_forward_input(input)
        if hx is None:
            hx = (self._zeros(input), self._zeros(input))
        self.check_forward_hidden(input, hx[0], "[0]")
        self.check_forward_hidden(input, hx[1], "[1]")
        ig, hg = self._gates(input, hx[0])
        h, c = _lstm_step(hg + ig, [None, hx[1].detach().numpy().astype(np.float32)])
        return from_numpy(np.ascontiguousarray(h)), from_numpy(np.ascontiguousarray(c))


class GRUCell(RNNCellBase):
    r"""A gated recurrent unit (GRU) cell with dynamically quantized weights; floating point
    inputs and outputs (``torch.ao.nn.quantized.dynamic.GRUCell``)."""

    def __init__(self, input_size, hidden_size, bias=True, dtype=_dt.qint8):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, dtype=dtype)

    def _get_name(self):
        return "DynamicQuantizedGRUCell"

    def forward(self, input, hx=None):
        self.check_forward_input(input)
        if hx is None:
            hx = self._zeros(input)
        self.check_forward_hidden(input, hx, "")
        ig, hg = self._gates(input, hx)
        h = _gru_step(ig, hg, hx.detach().numpy().astype(np.float32))
        return from_numpy(np.ascontiguousarray(h))


class RNNCell(RNNCellBase):
    r"""An Elman RNN cell (tanh or ReLU) with dynamically quantized weights; floating point
    inputs and outputs (``torch.ao.nn.quantized.dynamic.RNNCell``)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh",
                 dtype=_dt.qint8):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, dtype=dtype)
        self.nonlinearity = nonlinearity

    def _get_name(self):
        return "DynamicQuantizedRNNCell"

    def forward(self, input, hx=None):
        self.check_forward_input(input)
        if hx is None:
            hx = self._zeros(input)
        self.check_forward_hidden(input, hx, "")
        ig, hg = self._gates(input, hx)
        if self.nonlinearity == "tanh":
            h = np.tanh(hg + ig)
        elif self.nonlinearity == "relu":
            h = np.maximum(hg + ig, np.float32(0))
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return from_numpy(np.ascontiguousarray(h, dtype=np.float32))
