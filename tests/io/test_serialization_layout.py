"""ember.save writes the file torch.save writes: same records, offsets and size, and each
framework loads the other's file (tutorials compare checkpoint sizes)."""
import io
import zipfile
import zlib

import numpy as np
import pytest
import torch

import ember
import ember.nn


def _layout(data):
    zf = zipfile.ZipFile(io.BytesIO(data))
    return [(i.filename, i.file_size, i.header_offset, i.extra, i.flag_bits,
             i.CRC if "serialization_id" not in i.filename else None) for i in zf.infolist()]


def _saved(save, obj):
    buf = io.BytesIO()
    save(obj, buf)
    return buf.getvalue()


def _pickle_of(data):
    zf = zipfile.ZipFile(io.BytesIO(data))
    return zf.read(zf.namelist()[0])


def _without_id(data):
    """The file with its random 40-digit serialization id (and that record's CRC) zeroed:
    everything else of ember's file must equal torch's byte for byte."""
    name = [n for n in zipfile.ZipFile(io.BytesIO(data)).namelist()
            if n.endswith("/.data/serialization_id")][0]
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    start = info.header_offset + 30 + len(name) + extra_len
    sid = data[start:start + 40]
    assert sid.isdigit() and len(sid) == 40
    crc = zlib.crc32(sid).to_bytes(4, "little")
    return data[:start] + bytes(40) + data[start + 40:].replace(crc, bytes(4))


def _torch_model(kind):
    torch.manual_seed(0)
    if kind == "lstm":
        return torch.nn.LSTM(8, 8, 2)
    if kind == "convbn":
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                   torch.nn.Flatten(), torch.nn.Linear(4, 2))
    return torch.nn.Linear(5, 3)


def _ember_twin(tm, kind):
    if kind == "lstm":
        em = ember.nn.LSTM(8, 8, 2)
    elif kind == "convbn":
        em = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4),
                                 ember.nn.Flatten(), ember.nn.Linear(4, 2))
    else:
        em = ember.nn.Linear(5, 3)
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return em


@pytest.mark.parametrize("kind", ["linear", "lstm", "convbn"])
def test_state_dict_file_equals_torchs(kind):
    tm = _torch_model(kind)
    em = _ember_twin(tm, kind)
    t_bytes = _saved(torch.save, tm.state_dict())
    e_bytes = _saved(ember.save, em.state_dict())
    assert len(e_bytes) == len(t_bytes)
    assert _layout(e_bytes) == _layout(t_bytes)
    assert _pickle_of(e_bytes) == _pickle_of(t_bytes)
    assert _without_id(e_bytes) == _without_id(t_bytes)
    # each loads in the other
    back = torch.load(io.BytesIO(e_bytes))
    for k, v in tm.state_dict().items():
        assert torch.equal(back[k], v), k
    back = ember.load(io.BytesIO(t_bytes))
    for k, v in em.state_dict().items():
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())


def test_plain_tensors_and_shared_storage_layout():
    base = np.arange(12, dtype=np.float32)
    t_obj = {"a": torch.from_numpy(base.copy()), "n": 3}
    t_obj["v"] = t_obj["a"][2:6]
    e_obj = {"a": ember.tensor(base), "n": 3}
    e_obj["v"] = e_obj["a"][2:6]
    t_bytes, e_bytes = _saved(torch.save, t_obj), _saved(ember.save, e_obj)
    assert len(e_bytes) == len(t_bytes)
    assert _layout(e_bytes) == _layout(t_bytes)
    assert _pickle_of(e_bytes) == _pickle_of(t_bytes)


def test_file_path_uses_the_file_stem_as_record_prefix(tmp_path):
    tm = _torch_model("linear")
    em = _ember_twin(tm, "linear")
    (tmp_path / "t").mkdir()
    (tmp_path / "e").mkdir()
    torch.save(tm.state_dict(), tmp_path / "t" / "temp.p")
    ember.save(em.state_dict(), tmp_path / "e" / "temp.p")
    t_names = zipfile.ZipFile(tmp_path / "t" / "temp.p").namelist()
    assert zipfile.ZipFile(tmp_path / "e" / "temp.p").namelist() == t_names
    assert t_names[0] == "temp/data.pkl"
    assert (tmp_path / "e" / "temp.p").stat().st_size == (tmp_path / "t" / "temp.p").stat().st_size


def _quantized_pair(kind, seed=0, dtype="qint8"):
    """torch's and ember's quantize_dynamic of the same float model."""
    import ember.ao.quantization
    torch.manual_seed(seed)
    if kind == "lstm":
        tm, em = torch.nn.LSTM(8, 8, 2), ember.nn.LSTM(8, 8, 2)
        types = ({torch.nn.LSTM}, {ember.nn.LSTM})
    elif kind == "gru":  # two layers, both directions: one packed cell per layer-direction
        tm = torch.nn.GRU(8, 8, 2, bidirectional=True)
        em = ember.nn.GRU(8, 8, 2, bidirectional=True)
        types = ({torch.nn.GRU}, {ember.nn.GRU})
    else:
        tm = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
        em = ember.nn.Sequential(ember.nn.Linear(6, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
        types = ({torch.nn.Linear}, {ember.nn.Linear})
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    # quantize_dynamic swaps submodules, never the root
    tq = torch.ao.quantization.quantize_dynamic(torch.nn.Sequential(tm), types[0],
                                                dtype=getattr(torch, dtype))
    eq = ember.ao.quantization.quantize_dynamic(ember.nn.Sequential(em), types[1],
                                                dtype=getattr(ember, dtype))
    assert any("ao.nn.quantized.dynamic" in type(m).__module__ for m in eq.modules())
    return tq, eq


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
@pytest.mark.parametrize("kind", ["linear", "lstm", "gru"])
def test_dynamic_quantized_state_dict_file_equals_torchs(kind, dtype):
    tq, eq = _quantized_pair(kind, dtype=dtype)
    t_bytes = _saved(torch.save, tq.state_dict())
    e_bytes = _saved(ember.save, eq.state_dict())
    assert len(e_bytes) == len(t_bytes)
    assert _layout(e_bytes) == _layout(t_bytes)
    assert _without_id(e_bytes) == _without_id(t_bytes)
    # torch loads ember's file into its quantized model and ember loads torch's (weights
    # only): saved again, each writes the pickle the other wrote, so every packed weight,
    # scale, zero point and bias was read exactly
    tq2, eq2 = _quantized_pair(kind, seed=1, dtype=dtype)  # other weights, overwritten by the load
    assert _without_id(_saved(torch.save, tq2.state_dict())) != _without_id(t_bytes)
    tq2.load_state_dict(torch.load(io.BytesIO(e_bytes), weights_only=False))
    eq2.load_state_dict(ember.load(io.BytesIO(t_bytes)))
    assert _without_id(_saved(torch.save, tq2.state_dict())) == _without_id(t_bytes)
    assert _without_id(_saved(ember.save, eq2.state_dict())) == _without_id(t_bytes)
    # ember's own round trip
    eq3 = _quantized_pair(kind, seed=1, dtype=dtype)[1]
    eq3.load_state_dict(ember.load(io.BytesIO(e_bytes)))
    assert _without_id(_saved(ember.save, eq3.state_dict())) == _without_id(e_bytes)
