"""OpInfos of the sequence nn operators: LSTM/GRU layers and cells (the fused
``_lstm_layer``/``_gru_layer`` and the ``_lstm_cell``/``_gru_cell`` steps), CTC loss and
scaled dot-product attention.

The recurrent records run ``nn.LSTM``/``nn.GRU``/``nn.LSTMCell``/``nn.GRUCell`` through
``func.functional_call`` with the sample's weights, so the weights take gradients too.  The
modules are built on the meta device: their own parameters (never used) are not drawn from
the host generator, so the records run on any device (tests/ops/test_backend_neutral.py).
"""
import numpy as np

from .core import OpInfo, SampleInput, make

TOL = dict(atol=1e-5, rtol=1e-4)
I, H, T, B = 3, 4, 5, 2
# the 2-layer bidirectional records check the stacking and direction wiring: a smaller hidden
# size keeps their finite differences (~300 inputs instead of ~800) affordable; batch and time
# differ (batch_first's transpose shows), as do the layer-1 input (2H) and the hidden size
DEEP = dict(i=3, h=2, t=4, b=3)


def _weights(gates, dtype, rng, layers=1, bidirectional=False, i=I, h=H):
    ws = []
    for layer in range(layers):
        for _ in range(2 if bidirectional else 1):
            n_in = i if layer == 0 else h * (2 if bidirectional else 1)
            ws += [make((gates * h, n_in), dtype, rng, low=-0.5, high=0.5),
                   make((gates * h, h), dtype, rng, low=-0.5, high=0.5),
                   make((gates * h,), dtype, rng, low=-0.5, high=0.5),
                   make((gates * h,), dtype, rng, low=-0.5, high=0.5)]
    return ws


def _names(layers, bidirectional):
    out = []
    for layer in range(layers):
        for sfx in ("", "_reverse")[:2 if bidirectional else 1]:
            out += [f"{k}_l{layer}{sfx}" for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    return out


def _rnn(mode, layers=1, bidirectional=False, batch_first=False, i=I, h=H):
    def fn(lib, x, h0, *ws):
        m = getattr(lib.nn, mode)(i, h, num_layers=layers, bidirectional=bidirectional,
                                  batch_first=batch_first, device="meta").to(x.dtype)
        params = dict(zip(_names(layers, bidirectional), ws))
        if mode == "LSTM":
            state = (h0, lib.tanh(h0) * 0.5)
        else:
            state = h0
        out, last = lib.func.functional_call(m, params, (x, state))
        return (out,) + (tuple(last) if mode == "LSTM" else (last,))
    return fn


def _rnn_samples(gates, layers=1, bidirectional=False, batch_first=False, i=I, h=H, t=T, b=B):
    def gen(dtype, rng):
        d = 2 if bidirectional else 1
        x = make((b, t, i) if batch_first else (t, b, i), dtype, rng)
        yield SampleInput((x, make((layers * d, b, h), dtype, rng),
                           *_weights(gates, dtype, rng, layers, bidirectional, i, h)))
    return gen


def _cell(mode):
    def fn(lib, x, h0, *ws):
        m = getattr(lib.nn, mode)(I, H, device="meta").to(x.dtype)
        params = dict(zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), ws))
        state = (h0, lib.tanh(h0) * 0.5) if mode == "LSTMCell" else h0
        return lib.func.functional_call(m, params, (x, state))
    return fn


def _cell_samples(gates):
    def gen(dtype, rng):
        yield SampleInput((make((B, I), dtype, rng), make((B, H), dtype, rng),
                           *_weights(gates, dtype, rng)), name="batched")
        yield SampleInput((make((I,), dtype, rng), make((H,), dtype, rng),
                           *_weights(gates, dtype, rng)), name="unbatched")
    return gen


def _ctc(dtype, rng):
    C = 5
    lp = make((6, 2, C), dtype, rng)
    yield SampleInput((lp, rng.integers(1, C, (2, 3)), np.array([6, 5]), np.array([3, 2])),
                      name="padded-targets", grad_args=(0,))
    yield SampleInput((make((7, 3, C), dtype, rng), rng.integers(1, C, (5,)),
                       np.array([7, 6, 7]), np.array([2, 1, 2])), {"reduction": "sum"},
                      name="concatenated-sum", grad_args=(0,))
    yield SampleInput((make((5, C), dtype, rng), rng.integers(1, C, (2,)), np.array([5]),
                       np.array([2])), {"reduction": "none"}, name="unbatched", grad_args=(0,))


def _ctc_fn(lib, lp, targets, in_len, tgt_len, **kw):
    return lib.nn.functional.ctc_loss(lp.log_softmax(-1), targets, in_len, tgt_len, **kw)


def _sdpa(dtype, rng):
    q = make((2, 3, 4), dtype, rng)
    yield SampleInput((q, make((2, 5, 4), dtype, rng), make((2, 5, 3), dtype, rng)), name="plain")
    yield SampleInput((make((2, 2, 4, 4), dtype, rng), make((2, 2, 4, 4), dtype, rng),
                       make((2, 2, 4, 4), dtype, rng)), {"is_causal": True}, name="causal")
    yield SampleInput((q, make((2, 5, 4), dtype, rng), make((2, 5, 3), dtype, rng),
                       make((3, 5), dtype, rng)), {"scale": 0.7}, name="float-mask-scale")
    yield SampleInput((q, make((2, 5, 4), dtype, rng), make((2, 5, 3), dtype, rng),
                       rng.random((2, 3, 5)) > 0.3), name="bool-mask")


# ops=: the fused layer operators and their backward ops, and the fused attention backward
# (which runs only when no dispatch mode is active: the coverage collector's recording mode
# sees the blockwise backward instead)
OPS = [
    OpInfo("nn.LSTM", fn=_rnn("LSTM"), samples=_rnn_samples(4),
           ops=("_lstm_layer", "_lstm_layer_backward"), **TOL),
    OpInfo("nn.LSTM-2layer-bidirectional-batch_first",
           fn=_rnn("LSTM", 2, True, True, DEEP["i"], DEEP["h"]),
           samples=_rnn_samples(4, 2, True, True, **DEEP),
           ops=("_lstm_layer", "_lstm_layer_backward"), **TOL),
    OpInfo("nn.GRU", fn=_rnn("GRU"), samples=_rnn_samples(3),
           ops=("_gru_layer", "_gru_layer_backward"), **TOL),
    OpInfo("nn.GRU-2layer-bidirectional", fn=_rnn("GRU", 2, True, False, DEEP["i"], DEEP["h"]),
           samples=_rnn_samples(3, 2, True, False, **DEEP),
           ops=("_gru_layer", "_gru_layer_backward"), **TOL),
    OpInfo("nn.LSTMCell", fn=_cell("LSTMCell"), samples=_cell_samples(4), **TOL),
    OpInfo("nn.GRUCell", fn=_cell("GRUCell"), samples=_cell_samples(3), **TOL),
    # the lengths-as-tensors operators run only under vmap with per-example lengths
    # (tests/func/test_vmap_opdb.py batches this record's length arrays)
    OpInfo("nn.functional.ctc_loss", fn=_ctc_fn, samples=_ctc,
           ops=("_ctc_loss_tensor", "_ctc_loss_tensor_backward"), **TOL),
    OpInfo("nn.functional.scaled_dot_product_attention", samples=_sdpa,
           ops=("_flash_attention_backward",), **TOL),
]
