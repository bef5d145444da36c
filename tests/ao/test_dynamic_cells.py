"""Dynamically quantized LSTMCell / GRUCell / RNNCell against torch's."""
import io

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.ao.nn.quantized import dynamic as nnqd
from ember.ao.quantization import quantize_dynamic

from ._oracle import copy_params, torch_call, torch_quantize_dynamic, torch_repr

CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
         ("RNNCell", {"nonlinearity": "relu"})]


def _pair(name, kw, dtype=ember.qint8):
    ember.manual_seed(0)
    m = getattr(nn, name)(5, 4, **kw)
    t = getattr(torch.nn, name)(5, 4, **kw)
    copy_params(m, t)
    tdtype = {ember.qint8: torch.qint8, ember.float16: torch.float16}[dtype]
    return (quantize_dynamic(nn.Sequential(m), dtype=dtype)[0],
            torch_quantize_dynamic(torch.nn.Sequential(t), dtype=tdtype)[0], m)


def _arrays(result):
    return [r.detach().numpy() for r in (result if isinstance(result, tuple) else (result,))]


@pytest.mark.parametrize("name,kw", CELLS, ids=lambda v: v if isinstance(v, str) else
                         ",".join(f"{k}={x}" for k, x in v.items()))
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_cells_match_torch(name, kw, dtype):
    q, tq, m = _pair(name, kw, getattr(ember, dtype))
    assert repr(q) == torch_repr(tq)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    h = rng.standard_normal((3, 4)).astype(np.float32)
    if name == "LSTMCell":
        hx, thx = (ember.tensor(h), ember.tensor(-h)), (torch.from_numpy(h), torch.from_numpy(-h))
    else:
        hx, thx = ember.tensor(h), torch.from_numpy(h)
    for args, targs in (((ember.tensor(x),), (torch.from_numpy(x),)),
                        ((ember.tensor(x), hx), (torch.from_numpy(x), thx))):
        ours, theirs = _arrays(q(*args)), _arrays(torch_call(tq, *targs))
        for a, b in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)
    ref = _arrays(m(ember.tensor(x), hx))[0]
    assert np.abs(_arrays(q(ember.tensor(x), hx))[0] - ref).max() < 0.05


def test_cell_weights_state_dict_and_errors():
    q, tq, _ = _pair("LSTMCell", {})
    for key, w in q.get_weight().items():
        tw = torch_call(tq.get_weight)[key]
        np.testing.assert_array_equal(w.int_repr().numpy(), tw.int_repr().numpy())
        assert w.q_scale() == pytest.approx(tw.q_scale(), rel=1e-7)
    assert list(q.state_dict()) == list(tq.state_dict())
    buf = io.BytesIO()
    ember.save(q.state_dict(), buf)
    buf.seek(0)
    fresh = nnqd.LSTMCell(5, 4)
    fresh.load_state_dict(ember.load(buf))
    x = ember.randn(2, 5)
    for a, b in zip(_arrays(fresh(x)), _arrays(q(x))):
        np.testing.assert_array_equal(a, b)
    msg = "input has inconsistent input_size: got 3, expected 5"
    with pytest.raises(RuntimeError, match=msg):
        torch_call(tq, torch.randn(2, 3))
    with pytest.raises(RuntimeError, match=msg):
        q(ember.randn(2, 3))
    msg = r"Input batch size 2 doesn't match hidden\[0\] batch size 3"
    with pytest.raises(RuntimeError, match=msg):
        q(ember.randn(2, 5), (ember.randn(3, 4), ember.randn(3, 4)))
    with pytest.raises(AssertionError, match="only works for nn.LSTMCell"):
        nnqd.LSTMCell.from_float(nn.Linear(2, 2))
