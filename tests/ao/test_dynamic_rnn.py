"""Dynamically quantized LSTM and GRU against torch's (same weights, same inputs)."""
import io

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.ao.nn.quantized import dynamic as nnqd
from ember.ao.quantization import quantize_dynamic
from ember.nn.utils.rnn import pack_padded_sequence

from ._oracle import copy_params, to_ember, to_torch, torch_call, torch_quantize_dynamic, \
    torch_repr

CONFIGS = [dict(), dict(num_layers=2), dict(bidirectional=True),
           dict(num_layers=2, bidirectional=True, batch_first=True)]


def _pair(mode, input_size, hidden_size, dtype=ember.qint8, seed=0, **kw):
    ember.manual_seed(seed)
    m = getattr(nn, mode)(input_size, hidden_size, **kw)
    t = getattr(torch.nn, mode)(input_size, hidden_size, **kw)
    copy_params(m, t)
    tdtype = {ember.qint8: torch.qint8, ember.float16: torch.float16}[dtype]
    q = quantize_dynamic(nn.Sequential(m), {getattr(nn, mode)}, dtype=dtype)
    tq = torch_quantize_dynamic(torch.nn.Sequential(t), {getattr(torch.nn, mode)}, dtype=tdtype)
    return q[0], tq[0], m


def _flat(result):
    out, hidden = result
    hidden = hidden if isinstance(hidden, tuple) else (hidden,)
    return [out] + list(hidden)


def _compare(ours, theirs, atol):
    for a, b in zip(_flat(ours), _flat(theirs)):
        a = a.data if isinstance(a, ember.nn.utils.rnn.PackedSequence) else a
        b = b.data if isinstance(b, torch.nn.utils.rnn.PackedSequence) else b
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=0, atol=atol)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: ",".join(kw) or "default")
def test_outputs_match_torch_quantized(mode, kw):
    q, tq, _ = _pair(mode, 6, 5, **kw)
    shape = (3, 7, 6) if kw.get("batch_first") else (7, 3, 6)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    # quantization steps here are ~1e-2 / 127; float rounding differences stay far below
    _compare(q(ember.tensor(x)), torch_call(tq, torch.from_numpy(x)), atol=1e-5)
    d = 2 if kw.get("bidirectional") else 1
    states = np.random.default_rng(4).standard_normal((kw.get("num_layers", 1) * d, 3, 5))
    states = states.astype(np.float32)
    if mode == "LSTM":
        hx = (ember.tensor(states), ember.tensor(states * 0.5))
        thx = (torch.from_numpy(states), torch.from_numpy(states * 0.5))
    else:
        hx, thx = ember.tensor(states), torch.from_numpy(states)
    _compare(q(ember.tensor(x), hx), torch_call(tq, torch.from_numpy(x), thx), atol=1e-5)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_unbatched_input_refused_like_torch(mode):
    q, tq, _ = _pair(mode, 4, 3)
    x = np.random.default_rng(5).standard_normal((6, 4)).astype(np.float32)
    msg = "input must have 3 dimensions, got 2"
    with pytest.raises(RuntimeError, match=msg):
        torch_call(tq, torch.from_numpy(x))
    with pytest.raises(RuntimeError, match=msg):
        q(ember.tensor(x))


def test_packed_sequence_input():
    q, tq, _ = _pair("LSTM", 4, 3, bidirectional=True)
    x = np.random.default_rng(6).standard_normal((5, 3, 4)).astype(np.float32)
    lengths = [5, 2, 4]
    ours = q(pack_padded_sequence(ember.tensor(x), lengths, enforce_sorted=False))
    theirs = torch_call(tq, torch.nn.utils.rnn.pack_padded_sequence(
        torch.from_numpy(x), lengths, enforce_sorted=False))
    _compare(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_float16_weights_match_torch(mode):
    q, tq, _ = _pair(mode, 6, 5, dtype=ember.float16, num_layers=2)
    x = np.random.default_rng(7).standard_normal((4, 2, 6)).astype(np.float32)
    _compare(q(ember.tensor(x)), torch_call(tq, torch.from_numpy(x)), atol=1e-5)


def test_close_to_float():
    q, _, m = _pair("LSTM", 8, 8)
    x = ember.randn(20, 1, 8)
    ref = m(x)[0].detach().numpy()
    out = q(x)[0].numpy()
    assert 0 < np.abs(out - ref).mean() / np.abs(ref).mean() < 0.05


def test_weights_match_torch():
    q, tq, _ = _pair("LSTM", 6, 5, bidirectional=True)
    ours, theirs = q.get_weight(), torch_call(tq.get_weight)
    assert list(ours) == list(theirs)
    for name, w in ours.items():
        tw = theirs[name]
        np.testing.assert_array_equal(w.int_repr().numpy(), tw.int_repr().numpy())
        assert w.q_scale() == pytest.approx(tw.q_scale(), rel=1e-7)
        assert w.q_zero_point() == tw.q_zero_point()
    tb = torch_call(tq.get_bias)
    for name, b in q.get_bias().items():
        np.testing.assert_array_equal(b.numpy(), tb[name].detach().numpy())


@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True, dropout=0.2)])
def test_repr_and_names_like_torch(kw):
    for mode in ("LSTM", "GRU"):
        q, tq, _ = _pair(mode, 6, 5, **kw)
        assert repr(q) == torch_repr(tq)
        assert repr(q).split("(")[0] == f"DynamicQuantized{mode}"
        assert type(q) is getattr(nnqd, mode) and not isinstance(q, nn.LSTM)
        assert list(q.state_dict()) == list(tq.state_dict())


def test_state_dict_round_trip_and_smaller_file():
    q, _, m = _pair("LSTM", 8, 8, num_layers=2)
    qbuf, fbuf = io.BytesIO(), io.BytesIO()
    ember.save(q.state_dict(), qbuf)
    ember.save(m.state_dict(), fbuf)
    assert len(qbuf.getvalue()) < len(fbuf.getvalue())
    qbuf.seek(0)
    fresh = nnqd.LSTM(8, 8, 2)
    x = ember.randn(5, 2, 8)
    fresh.load_state_dict(ember.load(qbuf))
    for a, b in zip(_flat(fresh(x)), _flat(q(x))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_errors_like_torch():
    with pytest.raises(AssertionError, match="only works for nn.LSTM and nn.GRU"):
        nnqd.LSTM.from_float(nn.RNN(2, 2))
    with pytest.raises(RuntimeError, match="Unsupported dtype for dynamic RNN quantization"):
        nnqd.LSTM(2, 2, dtype=ember.int8)
    q, tq, _ = _pair("LSTM", 4, 3)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        torch_call(tq, torch.randn(2, 1, 5))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        q(ember.randn(2, 1, 5))
