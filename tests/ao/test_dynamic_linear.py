"""Dynamically quantized Linear against torch's (same weights, same inputs)."""
import io

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.ao.nn.quantized import dynamic as nnqd
from ember.ao.quantization import quantize_dynamic

from ._oracle import copy_params, to_ember, to_torch, torch_call, torch_quantize_dynamic, \
    torch_repr


def _pair(in_f, out_f, bias=True, seed=0, dtype=ember.qint8):
    ember.manual_seed(seed)
    m = nn.Sequential(nn.Linear(in_f, out_f, bias=bias))
    t = torch.nn.Sequential(torch.nn.Linear(in_f, out_f, bias=bias))
    copy_params(m, t)
    tdtype = {ember.qint8: torch.qint8, ember.float16: torch.float16}[dtype]
    return quantize_dynamic(m, dtype=dtype), torch_quantize_dynamic(t, dtype=tdtype), m


def _step(tq, x):
    """One quantization step of the output: activation scale (reduce_range: 0..127) times
    weight scale times the largest weight magnitude."""
    w = torch_call(tq.weight)
    span = max(float(x.max()), 0.0) - min(float(x.min()), 0.0)
    return span / 127 * w.q_scale() * 128


@pytest.mark.parametrize("shape", [(5, 16), (3, 4, 16), (2, 1, 16), (1, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_outputs_match_torch_quantized(shape, bias):
    q, tq, _ = _pair(16, 7, bias=bias)
    rng = np.random.default_rng(1)
    for x in (rng.standard_normal(shape), rng.uniform(0.5, 3.0, shape),
              -rng.uniform(0.5, 3.0, shape), np.zeros(shape)):
        x = x.astype(np.float32)
        ours = q[0](ember.tensor(x)).numpy()
        theirs = torch_call(tq[0], torch.from_numpy(x)).detach().numpy()
        assert ours.shape == theirs.shape and ours.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=max(_step(tq[0], x), 1e-6) * 1e-3)


def test_close_to_float_and_not_equal_to_it():
    q, _, m = _pair(64, 32)
    x = ember.randn(8, 64)
    ref = m(x).detach().numpy()
    out = q(x).numpy()
    rel = np.abs(out - ref).mean() / np.abs(ref).mean()
    assert 0 < rel < 0.02


def test_weight_qparams_match_torch():
    q, tq, _ = _pair(16, 7)
    w, tw = q[0].weight(), torch_call(tq[0].weight)
    assert w.dtype is ember.qint8 and w.qscheme() is ember.ao.per_tensor_affine
    assert w.q_zero_point() == tw.q_zero_point() == 0
    assert w.q_scale() == pytest.approx(tw.q_scale(), rel=1e-7)
    np.testing.assert_array_equal(w.int_repr().numpy(), tw.int_repr().numpy())
    assert w.int_repr().dtype is ember.int8
    np.testing.assert_allclose(w.dequantize().numpy(), tw.dequantize().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(q[0].bias().numpy(), tq[0].bias().detach().numpy())


def test_float16_weights_match_torch():
    q, tq, _ = _pair(16, 7, dtype=ember.float16)
    x = np.random.default_rng(2).standard_normal((4, 16)).astype(np.float32)
    ours = q[0](ember.tensor(x)).numpy()
    theirs = torch_call(tq[0], torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    assert repr(q[0]) == torch_repr(tq[0])


def test_repr_and_names_like_torch():
    q, tq, _ = _pair(4, 3)
    assert repr(q) == torch_repr(tq)
    assert repr(q[0]).split("(")[0] == "DynamicQuantizedLinear"
    assert type(q[0]) is nnqd.Linear
    assert [n for n, _ in q.named_modules()] == [n for n, _ in tq.named_modules()]


def test_state_dict_round_trip_and_smaller_file():
    q, tq, m = _pair(64, 32)
    assert list(q.state_dict()) == list(tq.state_dict())
    qbuf, fbuf = io.BytesIO(), io.BytesIO()
    ember.save(q.state_dict(), qbuf)
    ember.save(m.state_dict(), fbuf)
    assert len(qbuf.getvalue()) < len(fbuf.getvalue()) * 0.5
    qbuf.seek(0)
    fresh = quantize_dynamic(nn.Sequential(nn.Linear(64, 32)))
    x = ember.randn(3, 64)
    assert not np.array_equal(fresh(x).numpy(), q(x).numpy())
    fresh.load_state_dict(ember.load(qbuf))
    np.testing.assert_array_equal(fresh(x).numpy(), q(x).numpy())
    assert fresh[0].weight().q_scale() == q[0].weight().q_scale()


def test_missing_key_reported():
    q, _, _ = _pair(4, 3)
    sd = q.state_dict()
    del sd["0._packed_params._packed_params"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\).*0\._packed_params\._packed_params'):
        quantize_dynamic(nn.Sequential(nn.Linear(4, 3))).load_state_dict(sd)


def test_bad_inputs_raise_like_torch():
    q, tq, _ = _pair(4, 3)
    with pytest.raises(RuntimeError):
        q(ember.randn(2, 5))
    msg = "The dimension of input tensor should be larger than or equal to 2"
    with pytest.raises(RuntimeError, match=msg):
        torch_call(tq, torch.randn(4))
    with pytest.raises(RuntimeError, match=msg):
        q(ember.randn(4))


def test_from_float_requires_linear_and_qconfig():
    with pytest.raises(AssertionError, match="only works for one of"):
        nnqd.Linear.from_float(nn.Conv1d(2, 2, 1))
    with pytest.raises(AssertionError, match="Input float module must have qconfig defined"):
        nnqd.Linear.from_float(nn.Linear(2, 2))


def test_direct_linear_default_placeholder():
    lin = nnqd.Linear(4, 3)
    assert repr(lin) == torch_repr(torch_call(torch.ao.nn.quantized.dynamic.Linear, 4, 3))
    np.testing.assert_array_equal(lin(ember.ones(2, 4)).numpy(), np.zeros((2, 3), np.float32))
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        nnqd.Linear(4, 3, dtype=ember.int8)


def test_custom_affine_weight_qconfig_matches_torch():
    """A qconfig whose weight observer is affine (non-zero weight zero point)."""
    Q, TQ = ember.ao.quantization, torch.ao.quantization
    qconfig = Q.QConfig(activation=Q.default_dynamic_quant_observer,
                        weight=Q.MinMaxObserver.with_args(dtype=ember.qint8))
    tqconfig = TQ.QConfig(activation=TQ.default_dynamic_quant_observer,
                          weight=TQ.MinMaxObserver.with_args(dtype=torch.qint8))
    ember.manual_seed(3)
    m = nn.Sequential(nn.Linear(16, 7))
    with ember.no_grad():
        m[0].weight.add_(0.2)  # an asymmetric range
    t = torch.nn.Sequential(torch.nn.Linear(16, 7))
    copy_params(m, t)
    q = quantize_dynamic(m, {nn.Linear: qconfig})
    tq = torch_quantize_dynamic(t, {torch.nn.Linear: tqconfig})
    w, tw = q[0].weight(), torch_call(tq[0].weight)
    assert w.q_zero_point() == tw.q_zero_point() != 0
    np.testing.assert_array_equal(w.int_repr().numpy(), tw.int_repr().numpy())
    x = np.random.default_rng(4).standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_allclose(q(ember.tensor(x)).numpy(),
                               torch_call(tq, torch.from_numpy(x)).numpy(), rtol=0, atol=1e-5)
