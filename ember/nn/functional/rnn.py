"""The recurrent layers' step functions and layer loop (behind ``nn.RNN/LSTM/GRU`` and cells).

Each step costs one matmul for all gates of the hidden state (the input projection of
every time step is one matmul per layer and direction, done up front) plus one fused
cell operator (``ember.ops.nn.rnn``).  Padded and packed inputs share one loop: a
padded batch is a packed one whose batch size never shrinks.  When every step has the
same batch size, a whole LSTM (without projections) or GRU layer direction is one operator
instead (``_lstm_layer`` / ``_gru_layer``), in eager runs and under every mode alike.
"""

from ...ops import addmm, cat, stack
from ...ops.nn.rnn import GRU_CELL, GRU_LAYER, LSTM_CELL, LSTM_LAYER  # noqa: F401

__all__ = []


def _run_fused(mode, xw, T, B, state0, w, reverse):
    """One layer direction as one operator; None where the per-step loop must run."""
    if not T or w.get("hrT") is not None or mode not in ("LSTM", "GRU"):
        return None
    xw = xw.reshape((T, B, xw.shape[-1]))
    last = 0 if reverse else T - 1
    if mode == "LSTM":
        hs, cs, _ = LSTM_LAYER(xw, state0[0], state0[1], w["hhT"], reverse=reverse)
        return hs.reshape((T * B, hs.shape[-1])), (hs[last], cs[last])
    hs, _ = GRU_LAYER(xw, state0[0], w["hhT"], w["b_hh"], reverse=reverse)
    return hs.reshape((T * B, hs.shape[-1])), (hs[last],)


# ---- one step of each cell kind ------------------------------------------------------------
# A step takes the input projection xw (biases folded in where the math allows), the state
# tuple and the layer's weights, and returns the new state tuple; state[0] is the output.

def _relu(x):
    return x.clamp_min(0)


def _step_rnn(act):
    def step(xw, state, w):
        return (act(addmm(xw, state[0], w["hhT"])),)
    return step


def _step_lstm(xw, state, w):
    h, c = LSTM_CELL(addmm(xw, state[0], w["hhT"]), state[1])
    if w.get("hrT") is not None:
        h = h.matmul(w["hrT"])
    return h, c


def _step_gru(xw, state, w):
    h = state[0]
    gh = h.matmul(w["hhT"]) if w["b_hh"] is None else addmm(w["b_hh"], h, w["hhT"])
    return (GRU_CELL(xw, gh, h),)


STEPS = {"RNN_TANH": _step_rnn(lambda x: x.tanh()), "RNN_RELU": _step_rnn(_relu),
         "LSTM": _step_lstm, "GRU": _step_gru}


def _dropout(x, p):
    from . import dropout as _d
    fn = getattr(_d, "dropout", None)
    if fn is not None:
        return fn(x, p, True)
    if p == 1:
        return x * 0
    return x * x.new_empty(x.shape).bernoulli_(1 - p) / (1 - p)


def input_projection(mode, x, w_ih, b_ih, b_hh):
    """x @ w_ih.T plus the biases that can be added before the recurrence."""
    b = b_ih
    if mode != "GRU" and b_hh is not None:
        b = b_ih + b_hh
    return x.matmul(w_ih.t()) if b is None else addmm(b, x, w_ih.t())


def _run_direction(mode, xw, bs, offs, state0, w, reverse):
    """Run one direction over packed rows; returns (output rows, final state tuple)."""
    step = STEPS[mode]
    T = len(bs)
    outs = [None] * T
    uniform = T and bs[0] == bs[-1]
    if uniform:
        fused = _run_fused(mode, xw, T, bs[0], state0, w, reverse)  # a SymInt stays symbolic
        if fused is not None:
            return fused
        xs = xw.reshape((T, bs[0], xw.shape[-1])).unbind(0)
        state = state0
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            state = step(xs[t], state, w)
            outs[t] = state[0]
        return (cat(outs, 0) if T else xw[:0, :0]), state
    if not reverse:
        cur = int(bs[0])
        state = tuple(s[:cur] for s in state0)
        done = []
        for t in range(T):
            b = int(bs[t])
            if b < cur:
                done.append(tuple(s[b:cur] for s in state))
                state = tuple(s[:b] for s in state)
                cur = b
            state = step(xw[offs[t]:offs[t] + b], state, w)
            outs[t] = state[0]
        done.append(state)
        final = tuple(cat([d[k] for d in reversed(done)], 0) for k in range(len(state)))
        return cat(outs, 0), final
    cur = int(bs[-1])
    state = tuple(s[:cur] for s in state0)
    for t in range(T - 1, -1, -1):
        b = int(bs[t])
        if b > cur:
            state = tuple(cat([s, s0[cur:b]], 0) for s, s0 in zip(state, state0))
            cur = b
        state = step(xw[offs[t]:offs[t] + b], state, w)
        outs[t] = state[0]
    return cat(outs, 0), state


def rnn_layers(mode, data, batch_sizes, hx, layer_weights, num_layers, bidirectional, dropout,
               training):
    """The multi-layer recurrence over packed rows ``data`` ((N, input_size)).

    hx: tuple of initial states, each (num_layers * num_directions, B, size).
    layer_weights[layer * D + d]: dict with w_ih, w_hh, b_ih, b_hh, w_hr (or None).
    Returns (output rows (N, D * out_size), tuple of final states stacked like hx).
    """
    bs = list(batch_sizes)  # a list: np.asarray would turn symbolic batch sizes into ints
    offs = [0] * len(bs)
    for t in range(1, len(bs)):
        offs[t] = offs[t - 1] + bs[t - 1]
    D = 2 if bidirectional else 1
    finals = [[] for _ in hx]
    x = data
    for layer in range(num_layers):
        if layer and dropout and training:
            x = _dropout(x, dropout)
        outs = []
        for d in range(D):
            p = layer_weights[layer * D + d]
            w = {"hhT": p["w_hh"].t(), "b_hh": p["b_hh"],
                 "hrT": p["w_hr"].t() if p.get("w_hr") is not None else None}
            xw = input_projection(mode, x, p["w_ih"], p["b_ih"], p["b_hh"])
            state0 = tuple(h[layer * D + d] for h in hx)
            out, fin = _run_direction(mode, xw, bs, offs, state0, w, reverse=d == 1)
            outs.append(out)
            for k, s in enumerate(fin):
                finals[k].append(s)
        x = outs[0] if D == 1 else cat(outs, -1)
    return x, tuple(stack(f, 0) for f in finals)


def cell_forward(mode, input, state, w_ih, w_hh, b_ih, b_hh):
    """One step of an RNNCell/LSTMCell/GRUCell on batched 2-D input."""
    xw = input_projection(mode, input, w_ih, b_ih, b_hh)
    return STEPS[mode](xw, state, {"hhT": w_hh.t(), "b_hh": b_hh, "hrT": None})

