"""Dynamically quantized recurrent layers: ``LSTM`` and ``GRU``
(``torch.ao.nn.quantized.dynamic.LSTM``/``GRU``).

Each layer and direction keeps its input-to-hidden and hidden-to-hidden weights as packed
qint8 (or float16) weights with their float biases.  As in torch's CPU kernels, the
input projection of a layer is computed for the whole sequence at once (one set of
activation qparams for the sequence), the hidden projection once per time step from the
current hidden state; gates and cell updates stay in float32.
"""
import numbers
import warnings

import numpy as np

from ....._core import dtype as _dt
from .....nn.modules.container import ModuleList
from .....nn.modules.module import Module
from .....nn.modules.rnn import GRU as _FloatGRU, LSTM as _FloatLSTM, RNNBase as _FloatRNNBase
from .....nn.utils.rnn import PackedSequence
from .....ops import from_numpy, zeros
from .....serialization._torch_objects import ScriptObjectRecord
from .._packed import PackedLinearWeight

__all__ = ["PackedParameter", "RNNBase", "LSTM", "GRU"]

_GATES = {"LSTM": 4, "GRU": 3}


class PackedParameter(Module):
    """Holds one layer-direction's packed weights; saved as ``param``: (dtype, (w_ih state),
    (w_hh state)), each state the int8 weight, its scale and zero point, and the bias."""

    def __init__(self, param):
        super().__init__()
        self.param = param  # (PackedLinearWeight ih, PackedLinearWeight hh)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        ih, hh = self.param
        if ih.bias is not None and hh.bias is not None:
            destination[prefix + "param"] = _cell_params(ih.dtype, ih.to_state(), hh.to_state())
        else:
            destination[prefix + "param"] = (ih.dtype, ih.to_state(), hh.to_state())

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        if prefix + "param" in state_dict:
            param = state_dict.pop(prefix + "param")
            if isinstance(param, ScriptObjectRecord):
                dtype, ih, hh = _from_cell_params(param)
            else:
                dtype, ih, hh = param
            self.param = (PackedLinearWeight.from_state(dtype, ih),
                          PackedLinearWeight.from_state(dtype, hh))
        elif strict:
            missing_keys.append(prefix + "param")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys,
                                      unexpected_keys, error_msgs)


_CELL_PARAMS = "__torch__.torch.classes.rnn.CellParamsBase"
_LINEAR_PACKED = "__torch__.torch.classes.quantized.LinearPackedParamsBase"
_CELL_KINDS = {"quantized_dynamic": _dt.qint8, "quantized_fp16": _dt.float16}


def _cell_params(dtype, ih, hh):
    """torch's pickled form of a layer-direction: a CellParamsBase script object,
    ("quantized_dynamic", [biases], [], [reduce_range], [packed ih, packed hh]) for qint8 and
    ("quantized_fp16", [], [], [], [packed ih, packed hh]) for float16, each packed weight a
    LinearPackedParamsBase object over (weight, bias)."""
    packed = [ScriptObjectRecord(_LINEAR_PACKED, ih), ScriptObjectRecord(_LINEAR_PACKED, hh)]
    if dtype is _dt.qint8:
        state = ("quantized_dynamic", [ih[1], hh[1]], [], [1], packed)
    else:
        state = ("quantized_fp16", [], [], [], packed)
    return ScriptObjectRecord(_CELL_PARAMS, state)


def _from_cell_params(obj):
    state = obj.state
    if obj.qualified_name != _CELL_PARAMS or type(state) is not tuple or len(state) != 5 or \
            state[0] not in _CELL_KINDS or len(state[4]) != 2 or \
            not all(isinstance(p, ScriptObjectRecord) and p.qualified_name == _LINEAR_PACKED
                    for p in state[4]):
        raise RuntimeError(f"unsupported packed RNN parameters {obj.qualified_name!r:.80} "
                           f"({state[0] if type(state) is tuple and state else state!r:.40})")
    return _CELL_KINDS[state[0]], state[4][0].state, state[4][1].state


def _sigmoid(x):
    return np.float32(1) / (np.float32(1) + np.exp(-x))


def _lstm_step(gates, state):
    h_size = gates.shape[1] // 4
    i, f, g, o = (gates[:, k * h_size:(k + 1) * h_size] for k in range(4))
    c = _sigmoid(f) * state[1] + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def _gru_step(igates, hgates, h):
    n_h = h.shape[1]
    r = _sigmoid(igates[:, :n_h] + hgates[:, :n_h])
    z = _sigmoid(igates[:, n_h:2 * n_h] + hgates[:, n_h:2 * n_h])
    n = np.tanh(igates[:, 2 * n_h:] + hgates[:, 2 * n_h:] * r)
    return (h - n) * z + n


def _run_direction(mode, data, batch_sizes, states, ih, hh, reverse, reduce_range):
    """One direction of one layer over (packed) rows ``data``; returns (output rows, final
    states).  ``states`` are (batch, hidden) arrays; rows of sequences that have ended keep
    their last state, as torch's packed-sequence recurrence does."""
    starts = np.concatenate([[0], np.cumsum(batch_sizes)]).astype(int)
    igates = ih.apply(data, reduce_range)
    states = [s.copy() for s in states]
    out = np.empty((data.shape[0], states[0].shape[1]), dtype=np.float32)
    steps = range(len(batch_sizes))
    for t in (reversed(steps) if reverse else steps):
        bs, lo = batch_sizes[t], starts[t]
        if bs == 0:
            continue
        hgates = hh.apply(states[0][:bs], reduce_range)
        if mode == "LSTM":
            h, c = _lstm_step(hgates + igates[lo:lo + bs], [s[:bs] for s in states])
            states[0][:bs], states[1][:bs] = h, c
        else:
            h = _gru_step(igates[lo:lo + bs], hgates, states[0][:bs])
            states[0][:bs] = h
        out[lo:lo + bs] = h
    return out, states


class RNNBase(Module):
    """Base of the dynamically quantized recurrent layers."""
    _version = 2
    _FLOAT_MODULE = _FloatRNNBase
    # input and state checks are the float layers' own (same messages as torch's)
    _state_sizes = _FloatRNNBase._state_sizes
    _check_input = _FloatRNNBase._check_input
    _check_hidden = _FloatRNNBase._check_hidden
    _prepare = _FloatRNNBase._prepare

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, dtype=_dt.qint8):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.dtype = dtype
        self.version = 2
        self.training = False
        self.proj_size = 0
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if dtype not in (_dt.qint8, _dt.float16):
            raise RuntimeError(f"Unsupported dtype for dynamic RNN quantization: {dtype}")
        gate_size = _GATES[mode] * hidden_size
        packed = []
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            for _ in range(directions):
                n_in = input_size if layer == 0 else hidden_size * directions
                # placeholders until weights are set (from_float or load_state_dict)
                ih = _placeholder(dtype, gate_size, n_in)
                hh = _placeholder(dtype, gate_size, hidden_size)
                packed.append(PackedParameter((ih, hh)))
        self._all_weight_values = ModuleList(packed)

    def _get_name(self):
        return "DynamicQuantizedRNN"

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def __repr__(self):
        # the packed weights are not shown as children, as in torch
        return f"{self._get_name()}({self.extra_repr()})"

    def _weight_bias(self):
        """{'weight': {name: quantized weight}, 'bias': {name: bias}} with torch's names
        (``weight_ih_l0``, ``bias_hh_l0_reverse``, ...)."""
        weights, biases = {}, {}
        directions = 2 if self.bidirectional else 1
        for k, packed in enumerate(self._all_weight_values):
            layer, direction = divmod(k, directions)
            suffix = "_reverse" if direction else ""
            for which, pw in zip(("ih", "hh"), packed.param):
                weights[f"weight_{which}_l{layer}{suffix}"] = pw.quantized_weight()
                biases[f"bias_{which}_l{layer}{suffix}"] = pw.bias
        return {"weight": weights, "bias": biases}

    def get_weight(self):
        return self._weight_bias()["weight"]

    def get_bias(self):
        return self._weight_bias()["bias"]

    def forward(self, input, hx=None):
        if not isinstance(input, PackedSequence) and input.dim() != 3:
            # torch's quantized recurrent layers take no unbatched (2-D) input
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        data, batch_sizes, states, info, unbatched = self._prepare(input, hx)
        packed, sorted_idx, unsorted_idx, padded = info
        x = data.detach().numpy().astype(np.float32)
        states = [s.detach().numpy().astype(np.float32) for s in states]
        directions = 2 if self.bidirectional else 1
        reduce_range = self.version is not None and self.version >= 2
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                ih, hh = self._all_weight_values[k].param
                out, fin = _run_direction(self.mode, x, batch_sizes, [s[k] for s in states],
                                          ih, hh, d == 1, reduce_range)
                outs.append(out)
                for acc, f in zip(finals, fin):
                    acc.append(f)
            x = np.concatenate(outs, axis=1) if directions == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                keep = np.random.default_rng().random(x.shape) >= self.dropout
                x = np.where(keep, x / np.float32(1 - self.dropout), np.float32(0))
        out = from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        finals = tuple(from_numpy(np.stack(f)) for f in finals)
        if packed:
            if unsorted_idx is not None:
                finals = tuple(f.index_select(1, unsorted_idx) for f in finals)
            result = PackedSequence(out, input.batch_sizes, sorted_idx, unsorted_idx)
        else:
            out = out.reshape((padded.shape[0], padded.shape[1], out.shape[-1]))
            if unbatched:
                out, finals = out.squeeze(1), tuple(f.squeeze(1) for f in finals)
            elif self.batch_first:
                out = out.transpose(0, 1)
            result = out
        return (result, finals) if self.mode == "LSTM" else (result, finals[0])

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        if type(mod) not in {_FloatLSTM, _FloatGRU}:
            raise AssertionError("nn.quantized.dynamic.RNNBase.from_float only works for "
                                 "nn.LSTM and nn.GRU")
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
        if mod.proj_size:
            raise RuntimeError("dynamic quantization of LSTM with projections (proj_size > 0) "
                               "is not supported")
        if not mod.bias:
            raise AssertionError("mod.bias must be True")
        q = (LSTM if mod.mode == "LSTM" else GRU)(
            mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
            mod.dropout, mod.bidirectional, dtype)
        packed = []
        for weights in mod._layer_weights():
            observe = None if dtype is _dt.float16 else weight_observer_method
            ih = PackedLinearWeight.from_float(weights["w_ih"], weights["b_ih"], dtype,
                                               observe and observe())
            hh = PackedLinearWeight.from_float(weights["w_hh"], weights["b_hh"], dtype,
                                               observe and observe())
            packed.append(PackedParameter((ih, hh)))
        q._all_weight_values = ModuleList(packed)
        return q


def _placeholder(dtype, rows, cols):
    w = zeros((rows, cols), dtype=_dt.int8 if dtype is _dt.qint8 else _dt.float16)
    return PackedLinearWeight(dtype, w, 0.1, 0, zeros(rows))


class LSTM(RNNBase):
    r"""A dynamic quantized LSTM module with floating point tensors as inputs and outputs;
    the weights are quantized (qint8 per tensor, or float16) once, the activations on each
    call (``torch.ao.nn.quantized.dynamic.LSTM``)."""
    _FLOAT_MODULE = _FloatLSTM

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def _get_name(self):
        return "DynamicQuantizedLSTM"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)


class GRU(RNNBase):
    r"""A dynamic quantized GRU module with floating point tensors as inputs and outputs
    (``torch.ao.nn.quantized.dynamic.GRU``)."""
    _FLOAT_MODULE = _FloatGRU

    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)

    def _get_name(self):
        return "DynamicQuantizedGRU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return super().from_float(mod, use_precomputed_fake_quant)
