"""Recurrent layers: RNN, LSTM (with projections), GRU and their single-step cells.

Parameter names, shapes, order and initialisation follow PyTorch, so state dicts are
interchangeable.  The recurrence itself lives in ``nn.functional.rnn``.
"""
import math
import numbers
import warnings

from ...autograd.grad_mode import no_grad
from ...ops import empty, zeros
from ..functional import rnn as _F
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _autocast_on():
    from ...amp.autocast_mode import is_autocast_enabled
    return any(is_autocast_enabled(d) for d in ("cpu", "cuda"))


def _check_size(name, v):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{name} should be of type int, got: {type(v).__name__}")
    if v <= 0:
        raise ValueError(f"{name} must be greater than zero")


def _init_uniform(module, hidden_size):
    stdv = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    with no_grad():
        for w in module.parameters():
            w.uniform_(-stdv, stdv)


class RNNBase(Module):
    """Base class for RNN modules (RNN, LSTM, GRU)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or \
                not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        _check_size("hidden_size", hidden_size)
        _check_size("num_layers", num_layers)
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        kw = {"dtype": dtype} if dtype is not None else {}
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                suffix = "_reverse" if direction == 1 else ""
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **kw)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        _init_uniform(self, self.hidden_size)

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self):
        """No-op: ember keeps no fused weight buffer."""

    def _layer_weights(self):
        out = []
        for names in self._all_weights:
            d = {n.split("_l")[0]: getattr(self, n) for n in names}
            out.append({"w_ih": d["weight_ih"], "w_hh": d["weight_hh"],
                        "b_ih": d.get("bias_ih"), "b_hh": d.get("bias_hh"),
                        "w_hr": d.get("weight_hr")})
        return out

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
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

    # ---- forward ------------------------------------------------------------------------
    def _state_sizes(self):
        """Sizes of the state tensors (h, and c for LSTM)."""
        real = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (real, self.hidden_size) if self.mode == "LSTM" else (real,)

    def _check_input(self, input, batch_sizes):
        # dynamically quantized RNNs (ember.ao) keep packed weights, not _flat_weights
        w = self._flat_weights[0] if getattr(self, "_flat_weights_names", None) else None
        if w is not None and input.dtype != w.dtype and not _autocast_on():
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({w.dtype}). Convert input: input.to({w.dtype}), or convert "
                             f"model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _check_hidden(self, states, mini_batch):
        D = 2 if self.bidirectional else 1
        for k, (h, size) in enumerate(zip(states, self._state_sizes())):
            expected = (self.num_layers * D, mini_batch, size)
            if tuple(h.shape) != expected:
                which = f"hidden[{k}]" if self.mode == "LSTM" else "hidden"
                raise RuntimeError(f"Expected {which} size {expected}, got {list(h.shape)}")

    def _prepare(self, input, hx):
        """Common front half of forward: unbatched/packed handling, default and checked
        initial states.  Returns (data, batch_sizes, states, packed info, unbatched)."""
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        lstm = self.mode == "LSTM"
        unbatched = False
        if packed:
            data, bs_t, sorted_idx, unsorted_idx = input
            batch_sizes = [int(b) for b in bs_t.tolist()]
            max_batch = batch_sizes[0] if batch_sizes else 0
            if hx is not None and sorted_idx is not None:
                hx = tuple(h.index_select(1, sorted_idx) for h in hx) if lstm else \
                    hx.index_select(1, sorted_idx)
        else:
            sorted_idx = unsorted_idx = None
            if input.dim() not in (2, 3):
                tail = "tensor instead" if self.mode.startswith("RNN") else "instead"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 f"{tail}")
            unbatched = input.dim() == 2
            if hx is not None:
                want = 2 if unbatched else 3
                kind = "unbatched 2-D" if unbatched else "batched 3-D"
                if lstm:
                    if hx[0].dim() != want or hx[1].dim() != want:
                        raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D "
                                           f"but got ({hx[0].dim()}-D, {hx[1].dim()}-D) "
                                           f"tensors")
                elif hx.dim() != want:
                    raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                                       f"{hx.dim()}-D tensor")
            if unbatched:
                input = input.unsqueeze(1)
                if hx is not None:
                    hx = tuple(h.unsqueeze(1) for h in hx) if lstm else hx.unsqueeze(1)
            elif self.batch_first:
                input = input.transpose(0, 1)
            T, max_batch = input.shape[0], input.shape[1]
            batch_sizes = [max_batch] * T
            data = input
        self._check_input(data, batch_sizes if packed else None)
        D = 2 if self.bidirectional else 1
        if hx is None:
            states = tuple(zeros((self.num_layers * D, max_batch, s), dtype=data.dtype,
                                 device=data.device)
                           for s in self._state_sizes())
        else:
            states = tuple(hx) if lstm else (hx,)
            self._check_hidden(states, max_batch)
        if not packed:
            data = data.reshape((-1, data.shape[-1]))
        return data, batch_sizes, states, (packed, sorted_idx, unsorted_idx, input), unbatched

    def _run(self, input, hx):
        data, batch_sizes, states, info, unbatched = self._prepare(input, hx)
        packed, sorted_idx, unsorted_idx, padded = info
        out, finals = _F.rnn_layers(self.mode, data, batch_sizes, states, self._layer_weights(),
                                    self.num_layers, self.bidirectional, self.dropout,
                                    self.training)
        if packed:
            if unsorted_idx is not None:
                finals = tuple(f.index_select(1, unsorted_idx) for f in finals)
            return PackedSequence(out, input.batch_sizes, sorted_idx, unsorted_idx), finals
        out = out.reshape((padded.shape[0], padded.shape[1], out.shape[-1]))
        if unbatched:
            return out.squeeze(1), tuple(f.squeeze(1) for f in finals)
        if self.batch_first:
            out = out.transpose(0, 1)
        return out, finals

    def forward(self, input, hx=None):
        out, finals = self._run(input, hx)
        return out, finals[0]


class RNN(RNNBase):
    """Multi-layer Elman RNN with tanh or ReLU non-linearity."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None,
                 *, proj_size=0):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             f"'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class LSTM(RNNBase):
    """Multi-layer long short-term memory RNN, with optional projections (``proj_size``)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)

    def forward(self, input, hx=None):
        out, finals = self._run(input, hx)
        return out, finals


class GRU(RNNBase):
    """Multi-layer gated recurrent unit RNN."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, *, proj_size=0):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


# ---- cells --------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Base class of the single-step cells."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        kw = {"dtype": dtype} if dtype is not None else {}
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **kw))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **kw))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), **kw))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), **kw))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        _init_uniform(self, self.hidden_size)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def _cell(self, mode, input, hx, n_states):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             f"instead")
        batched = input.dim() == 2
        states = None if hx is None else (tuple(hx) if n_states == 2 else (hx,))
        if states is not None and any(s.dim() != input.dim() for s in states):
            raise RuntimeError(f"{name}: Expected hidden to be {input.dim()}D, got "
                               f"{states[0].dim()}D instead")
        if not batched:
            input = input.unsqueeze(0)
            states = None if states is None else tuple(s.unsqueeze(0) for s in states)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        if states is None:
            states = tuple(zeros((input.shape[0], self.hidden_size), dtype=input.dtype,
                                 device=input.device)
                           for _ in range(n_states))
        for k, s in enumerate(states):
            if s.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                                   f"batch size {s.shape[0]}")
            if s.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {s.shape[1]}, "
                                   f"expected {self.hidden_size}")
        out = _F.cell_forward(mode, input, states, self.weight_ih, self.weight_hh,
                              self.bias_ih, self.bias_hh)
        if not batched:
            out = tuple(o.squeeze(0) for o in out)
        return out


class RNNCell(RNNCellBase):
    """An Elman RNN cell with tanh or ReLU non-linearity."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._cell(mode, input, hx, 1)[0]


class LSTMCell(RNNCellBase):
    """A long short-term memory (LSTM) cell."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        return self._cell("LSTM", input, hx, 2)


class GRUCell(RNNCellBase):
    """A gated recurrent unit (GRU) cell."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._cell("GRU", input, hx, 1)[0]

