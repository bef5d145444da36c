"""quantize_dynamic: which modules are swapped, how qconfig specs are read, its errors,
and the observers/qconfigs behind it, against torch."""
import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.ao import quantization as Q
from ember.ao.nn.quantized import dynamic as nnqd

from ._oracle import torch_call, torch_quantize_dynamic


def Net(nn_=nn):
    """The same small model built from ember's or torch's modules."""
    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn_.Linear(4, 8)
            self.rnn = nn_.LSTM(8, 8)
            self.block = nn_.Sequential(nn_.Linear(8, 8), nn_.ReLU(), nn_.Linear(8, 2))
            self.conv = nn_.Conv1d(2, 2, 1)
    return Net()


@pytest.mark.parametrize("spec", [None, "set", "dict", "names"])
def test_swapped_modules_like_torch(spec):
    specs = {None: (None, None),
             "set": ({nn.Linear}, {torch.nn.Linear}),
             "dict": ({nn.LSTM: Q.default_dynamic_qconfig},
                      {torch.nn.LSTM: torch.ao.quantization.default_dynamic_qconfig}),
             "names": ({"block.0", "rnn"}, {"block.0", "rnn"})}
    ours_spec, torch_spec = specs[spec]
    ours = Q.quantize_dynamic(Net(), ours_spec)
    theirs = torch_quantize_dynamic(Net(torch.nn), torch_spec)
    assert _names_without_packed(ours) == _names_without_packed(theirs)
    assert not any(hasattr(m, "qconfig") for m in ours.modules())


def _names_without_packed(model):
    return [(n, m._get_name()) for n, m in model.named_modules()
            if "_packed_params" not in n and "_all_weight_values" not in n]


def test_copy_unless_inplace_and_root_not_swapped():
    model = nn.Sequential(nn.Linear(3, 3))
    q = Q.quantize_dynamic(model)
    assert type(model[0]) is nn.Linear and type(q[0]) is nnqd.Linear
    same = Q.quantize_dynamic(model, inplace=True)
    assert same is model and type(model[0]) is nnqd.Linear
    bare = nn.Linear(3, 3)
    assert type(Q.quantize_dynamic(bare)) is nn.Linear  # torch swaps children only
    assert type(torch_quantize_dynamic(torch.nn.Linear(3, 3))) is torch.nn.Linear


def test_float16_dtype():
    q = Q.quantize_dynamic(nn.Sequential(nn.Linear(3, 3), nn.GRU(3, 3)), dtype=ember.float16)
    assert q[0]._packed_params.dtype is ember.float16 and q[1].dtype is ember.float16


def test_unknown_dtype_errors_like_torch():
    with pytest.raises(ValueError) as ours:
        Q.quantize_dynamic(nn.Sequential(nn.Linear(2, 2)), dtype=ember.int32)
    with pytest.raises(ValueError) as theirs:
        torch_quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(2, 2)), dtype=torch.int32)
    assert str(ours.value) == str(theirs.value).replace("torch.", "ember.")
    with pytest.raises(RuntimeError) as ours:
        Q.quantize_dynamic(nn.Sequential(nn.Linear(2, 2)), {nn.Linear}, dtype=ember.int32)
    with pytest.raises(RuntimeError) as theirs:
        torch_quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(2, 2)), {torch.nn.Linear},
                               dtype=torch.int32)
    assert ours.value.args[0] == theirs.value.args[0]
    with pytest.raises(RuntimeError, match="quint8 is not supported by ember"):
        Q.quantize_dynamic(nn.Sequential(nn.Embedding(3, 2)), dtype=ember.quint8)


def test_qconfig_rejects_observer_instances_like_torch():
    msg = "QConfig received observer instance, please pass observer class instead"
    with pytest.raises(ValueError, match=msg):
        Q.QConfig(activation=Q.MinMaxObserver(), weight=Q.default_weight_observer)
    with pytest.raises(ValueError, match=msg):
        torch.ao.quantization.QConfig(activation=torch.ao.quantization.MinMaxObserver(),
                                      weight=torch.ao.quantization.default_weight_observer)


def test_default_dynamic_qconfig_like_torch():
    ours, theirs = Q.default_dynamic_qconfig, torch.ao.quantization.default_dynamic_qconfig
    a, ta = ours.activation(), theirs.activation()
    w, tw = ours.weight(), theirs.weight()
    assert (a.dtype.name, a.is_dynamic) == (str(ta.dtype).split(".")[1], ta.is_dynamic)
    assert (w.dtype.name, w.qscheme.name, w.quant_min, w.quant_max) == \
        (str(tw.dtype).split(".")[1], str(tw.qscheme).split(".")[1], tw.quant_min, tw.quant_max)


@pytest.mark.parametrize("kw", [
    dict(), dict(reduce_range=True), dict(dtype="qint8", qscheme="per_tensor_symmetric"),
    dict(dtype="quint8", qscheme="per_tensor_symmetric"),
    dict(dtype="qint8", qscheme="per_tensor_affine", reduce_range=True),
    dict(quant_min=0, quant_max=127)])
def test_minmax_observer_qparams_match_torch(kw):
    def spell(module, kw):
        return {k: getattr(module, v) if isinstance(v, str) else v for k, v in kw.items()}
    ours = Q.MinMaxObserver(**spell(ember, {**kw, **({"qscheme": getattr(
        ember.ao, kw["qscheme"])} if "qscheme" in kw else {})}))
    theirs = torch_call(torch.ao.quantization.MinMaxObserver, **spell(torch, kw))
    rng = np.random.default_rng(8)
    for x in (rng.standard_normal((5, 7)) * 3, rng.uniform(0.1, 2, (4,)), -rng.uniform(1, 2, 3)):
        x = x.astype(np.float32)
        ours(ember.tensor(x))
        torch_call(theirs, torch.from_numpy(x))
        s, z = ours.calculate_qparams()
        ts, tz = theirs.calculate_qparams()
        assert float(s) == pytest.approx(float(ts), rel=1e-6)
        assert int(z) == int(tz)
    assert float(ours.min_val) == float(theirs.min_val)
    assert float(ours.max_val) == float(theirs.max_val)


def test_minmax_observer_rejects_per_channel_scheme():
    with pytest.raises(NotImplementedError, match="per_tensor_symmetric"):
        Q.MinMaxObserver(qscheme=ember.ao.per_channel_affine)


def test_activation_qparams_match_torch_choose_qparams():
    from ember.ao.nn.quantized._kernels import choose_qparams
    rng = np.random.default_rng(9)
    cases = [rng.standard_normal(50), rng.uniform(0, 1, 20), -rng.uniform(0, 1, 20),
             np.zeros(4), rng.standard_normal(30) * 1e-7, np.array([1e-6, -3e-6])]
    for x in cases:
        x = x.astype(np.float32)
        for reduce_range in (False, True):
            ts, tz = torch._choose_qparams_per_tensor(torch.from_numpy(x), reduce_range)
            s, z = choose_qparams(x.min(), x.max(), 0, 255, reduce_range)
            assert s == pytest.approx(ts, rel=1e-6) and z == tz


def test_legacy_torch_quantization_path():
    import importlib
    legacy = importlib.import_module("ember.quantization")
    assert legacy is ember.quantization is ember.ao.quantization
    assert legacy.quantize_dynamic is Q.quantize_dynamic
