"""vmap over the fused nn operators (LSTM/GRU layers and their backward, CTC loss and its
gradient, flash attention's backward) against a Python loop over the examples: the vmap
batch is folded into each op's own batch dim, and per-example weight gradients are kept
apart."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.func import grad, vmap
from ember.ops.nn.attention import FLASH_ATTENTION, FLASH_ATTENTION_BACKWARD
from ember.ops.nn.loss import CTC_GRAD
from ember.ops.nn.rnn import GRU_LAYER, GRU_LAYER_BACKWARD, LSTM_LAYER, LSTM_LAYER_BACKWARD

V = 3


def _t(rng, *shape):
    return ember.from_numpy(rng.standard_normal(shape))


def _loop(fn, *args):
    """fn on each example (dim 0 of every arg), outputs stacked."""
    outs = [fn(*(a[i] for a in args)) for i in range(V)]
    if isinstance(outs[0], tuple):
        return tuple(ember.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return ember.stack(outs)


def _close(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_layer_and_backward_under_vmap(reverse):
    rng = np.random.default_rng(0)
    T, B, n = 4, 2, 3
    xw, h0, c0 = _t(rng, V, T, B, 4 * n), _t(rng, V, B, n), _t(rng, V, B, n)
    whhT = _t(rng, n, 4 * n)
    fwd = lambda x, h, c: LSTM_LAYER(x, h, c, whhT, reverse=reverse)  # noqa: E731
    _close(vmap(fwd)(xw, h0, c0), _loop(fwd, xw, h0, c0))
    hs, cs, acts = _loop(fwd, xw, h0, c0)
    ghs, gcs = _t(rng, V, T, B, n), _t(rng, V, T, B, n)
    bwd = lambda gh, gc, a, h, c, x, h_, c_: LSTM_LAYER_BACKWARD(  # noqa: E731
        gh, gc, a, h, c, x, h_, c_, whhT, reverse=reverse)
    args = (ghs, gcs, acts, hs, cs, xw, h0, c0)
    # the weight gradient (output 3) is each example's own, not the sum over the vmap batch
    _close(vmap(bwd)(*args), _loop(bwd, *args))


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_gru_layer_and_backward_under_vmap(bias, reverse):
    rng = np.random.default_rng(1)
    T, B, n = 4, 2, 3
    xw, h0 = _t(rng, V, T, B, 3 * n), _t(rng, V, B, n)
    whhT, b = _t(rng, n, 3 * n), (_t(rng, 3 * n) if bias else None)
    fwd = lambda x, h: GRU_LAYER(x, h, whhT, b, reverse=reverse)  # noqa: E731
    _close(vmap(fwd)(xw, h0), _loop(fwd, xw, h0))
    hs, acts = _loop(fwd, xw, h0)
    ghs = _t(rng, V, T, B, n)
    bwd = lambda g, a, h, x, h_: GRU_LAYER_BACKWARD(g, a, h, x, h_, whhT, b,  # noqa: E731
                                                    reverse=reverse)
    _close(vmap(bwd)(ghs, acts, hs, xw, h0), _loop(bwd, ghs, acts, hs, xw, h0))


@pytest.mark.parametrize("reverse", [False, True])
def test_layers_with_per_example_weights(reverse):
    # a per-example recurrence matrix cannot fold into the layer's batch: the kernels run the
    # examples side by side (V between time and batch rows), no Python loop
    rng = np.random.default_rng(2)
    T, B, n = 3, 2, 2
    xw, h0, c0, whhT = (_t(rng, V, T, B, 4 * n), _t(rng, V, B, n), _t(rng, V, B, n),
                        _t(rng, V, n, 4 * n))
    fwd = lambda x, h, c, w: LSTM_LAYER(x, h, c, w, reverse=reverse)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(vmap(fwd)(xw, h0, c0, whhT), _loop(fwd, xw, h0, c0, whhT))
        hs, cs, acts = _loop(fwd, xw, h0, c0, whhT)
        bwd = lambda gh, gc, a, h, c, x, h_, c_, w: LSTM_LAYER_BACKWARD(  # noqa: E731
            gh, gc, a, h, c, x, h_, c_, w, reverse=reverse)
        args = (_t(rng, V, T, B, n), _t(rng, V, T, B, n), acts, hs, cs, xw, h0, c0, whhT)
        _close(vmap(bwd)(*args), _loop(bwd, *args))
        # GRU: per-example bias with a shared matrix, and both per example
        xg, wg, bg = _t(rng, V, T, B, 3 * n), _t(rng, n, 3 * n), _t(rng, V, 3 * n)
        gfwd = lambda x, h, b: GRU_LAYER(x, h, wg, b, reverse=reverse)  # noqa: E731
        _close(vmap(gfwd)(xg, h0, bg), _loop(gfwd, xg, h0, bg))
        wgs = _t(rng, V, n, 3 * n)
        gfwd2 = lambda x, h, w, b: GRU_LAYER(x, h, w, b, reverse=reverse)  # noqa: E731
        _close(vmap(gfwd2)(xg, h0, wgs, bg), _loop(gfwd2, xg, h0, wgs, bg))
        hs, acts = _loop(gfwd2, xg, h0, wgs, bg)
        gbwd = lambda g, a, h, x, h_, w, b: GRU_LAYER_BACKWARD(  # noqa: E731
            g, a, h, x, h_, w, b, reverse=reverse)
        args = (_t(rng, V, T, B, n), acts, hs, xg, h0, wgs, bg)
        _close(vmap(gbwd)(*args), _loop(gbwd, *args))
        gbwd0 = lambda g, a, h, x, h_, w: GRU_LAYER_BACKWARD(  # noqa: E731
            g, a, h, x, h_, w, None, reverse=reverse)
        hs, acts = _loop(lambda x, h, w: GRU_LAYER(x, h, w, None, reverse=reverse), xg, h0, wgs)
        args = (_t(rng, V, T, B, n), acts, hs, xg, h0, wgs)
        got = vmap(gbwd0)(*args)
        want = [_loop(lambda *a: gbwd0(*a)[k], *args) for k in range(3)]
        _close(got[:3], tuple(want))
        assert tuple(got[3].shape) == (V, 0)


@pytest.mark.parametrize("rnn", ["LSTM", "GRU"])
def test_rnn_module_per_example_grads(rnn):
    ember.manual_seed(0)
    m = getattr(ember.nn, rnn)(3, 4, bidirectional=True).double()
    x = ember.randn(V, 5, 2, 3, dtype=ember.float64)
    f = lambda xi: (m(xi)[0] ** 2).sum()  # noqa: E731
    _close(vmap(lambda xi: m(xi)[0])(x), _loop(lambda xi: m(xi)[0], x))
    _close(vmap(grad(f))(x), _loop(grad(f), x))


@pytest.mark.parametrize("concat", [False, True])
def test_ctc_loss_and_gradient_under_vmap(concat):
    rng = np.random.default_rng(3)
    T, N, C = 6, 2, 5
    lp = F.log_softmax(_t(rng, V, T, N, C), -1)
    in_lens, tgt_lens = [6, 5], [3, 2]
    if concat:
        targets = ember.from_numpy(rng.integers(1, C, (V, sum(tgt_lens))))
    else:
        targets = ember.from_numpy(rng.integers(1, C, (V, N, 3)))

    def loss(x, t):
        return F.ctc_loss(x, t, in_lens, tgt_lens, reduction="none")
    _close(vmap(loss)(lp, targets), _loop(loss, lp, targets))
    gk = lambda x, t: CTC_GRAD(x, t, in_lens=in_lens, tgt_lens=tgt_lens,  # noqa: E731
                                blank=0, zero_inf=False)
    _close(vmap(gk)(lp, targets), _loop(gk, lp, targets))
    g = grad(lambda x, t: loss(x, t).sum())
    _close(vmap(g)(lp, targets), _loop(g, lp, targets))


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_backward_under_vmap(causal):
    rng = np.random.default_rng(4)
    q, k, v = _t(rng, V, 2, 4, 3), _t(rng, V, 2, 5, 3), _t(rng, 2, 5, 2)  # v shared
    mask = ember.from_numpy(rng.standard_normal((4, 5)))  # broadcast over heads
    fwd = lambda q_, k_: FLASH_ATTENTION(q_, k_, v, mask, scale=0.5,  # noqa: E731
                                         causal=causal)
    _close(vmap(fwd)(q, k), _loop(fwd, q, k))
    out, lse = _loop(fwd, q, k)
    g_out, g_lse = _t(rng, V, 2, 4, 2), _t(rng, V, 2, 4)
    bwd = lambda q_, k_, go, o, l_, gl: FLASH_ATTENTION_BACKWARD(  # noqa: E731
        q_, k_, v, mask, go, o, l_, gl, scale=0.5, causal=causal)
    args = (q, k, g_out, out, lse, g_lse)
    _close(vmap(bwd)(*args), _loop(bwd, *args))
