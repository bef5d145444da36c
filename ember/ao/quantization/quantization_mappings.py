"""Which quantized module replaces which float module
(``torch.ao.quantization.quantization_mappings``)."""
from ..nn.quantized import dynamic as _nnqd
from ...nn.modules import linear as _linear, rnn as _rnn

__all__ = ["DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS", "get_default_dynamic_quant_module_mappings"]

DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS = {
    _rnn.GRUCell: _nnqd.GRUCell,
    _rnn.GRU: _nnqd.GRU,
    _rnn.LSTMCell: _nnqd.LSTMCell,
    _rnn.RNNCell: _nnqd.RNNCell,
    _rnn.LSTM: _nnqd.LSTM,
    _linear.Linear: _nnqd.Linear,
    _linear.NonDynamicallyQuantizableLinear: _nnqd.Linear,
}


def get_default_dynamic_quant_module_mappings():
    """Get module mapping for post training dynamic quantization."""
    return dict(DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS)
