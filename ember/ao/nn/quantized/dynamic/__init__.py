"""Dynamically quantized modules (``torch.ao.nn.quantized.dynamic``): weights stored
quantized, activations quantized on each call, float inputs and outputs."""
from .linear import Linear  # noqa: F401
from .rnn import GRU, LSTM, RNNBase  # noqa: F401
from .rnn_cell import GRUCell, LSTMCell, RNNCell, RNNCellBase  # noqa: F401

__all__ = ["Linear", "LSTM", "GRU", "RNNBase", "LSTMCell", "GRUCell", "RNNCell", "RNNCellBase"]
