"""ember.save / ember.load: round trips, PyTorch interop both ways, safety, atomicity."""
import collections
import io
import os
import pickle

import numpy as np
import pytest
import torch

import ember


def _np(t):
    return t.detach().cpu().float().numpy() if t.dtype == torch.bfloat16 else t.detach().numpy()


def _sample_state():
    x = ember.arange(12.0).reshape(3, 4)
    return collections.OrderedDict(
        w=x, row=x[1], col=x.t(), p=ember.nn.Parameter(ember.ones(2)),
        ints=ember.tensor([1, -2, 3]), half=ember.tensor([1.5, -2.25], dtype=ember.float16),
        bf=ember.tensor([0.5, 3.0], dtype=ember.bfloat16),
        c=ember.tensor([1 + 2j, -1j], dtype=ember.complex64), flag=ember.tensor(True),
        nested={"list": [ember.zeros(2), 3, "text", (1.5, None)]},
        dtype=ember.float16, size=ember.Size([2, 3]))


def test_round_trip_preserves_values_dtypes_and_shared_storage(tmp_path):
    sd = _sample_state()
    path = tmp_path / "ck.pt"
    ember.save(sd, path)
    got = ember.load(path)
    assert list(got) == list(sd)
    for k in ("w", "row", "col", "ints", "half", "bf", "c", "flag"):
        assert got[k].dtype == sd[k].dtype and got[k].shape == sd[k].shape
        np.testing.assert_array_equal(np.asarray(got[k]._data, dtype=np.complex128),
                                      np.asarray(sd[k]._data, dtype=np.complex128))
    assert isinstance(got["p"], ember.nn.Parameter) and got["p"].requires_grad
    assert got["dtype"] is ember.float16 and got["size"] == (2, 3)
    assert got["nested"]["list"][1:] == [3, "text", (1.5, None)]
    # views of one storage were saved once and still share memory after loading
    with ember.no_grad():
        got["w"][1, 0] = 100.0
    assert got["row"][0].item() == 100.0 and got["col"][0, 1].item() == 100.0


def test_torch_reads_ember_checkpoints(tmp_path):
    sd = _sample_state()
    path = tmp_path / "ck.pt"
    ember.save(sd, path)
    t = torch.load(path)  # torch's default is weights_only=True too
    np.testing.assert_array_equal(t["w"].numpy(), np.arange(12.0).reshape(3, 4))
    assert t["row"].untyped_storage().data_ptr() == t["w"].untyped_storage().data_ptr()
    np.testing.assert_array_equal(t["col"].numpy(), np.arange(12.0).reshape(3, 4).T)
    assert isinstance(t["p"], torch.nn.Parameter)
    assert t["bf"].dtype == torch.bfloat16 and t["half"].dtype == torch.float16
    assert t["dtype"] is torch.float16 and t["size"] == torch.Size([2, 3])
    np.testing.assert_array_equal(t["c"].numpy(), np.array([1 + 2j, -1j], np.complex64))
    t = torch.load(path, mmap=True)  # storages are 64-byte aligned like torch's own files
    np.testing.assert_array_equal(t["ints"].numpy(), [1, -2, 3])


def test_ember_reads_torch_checkpoints(tmp_path):
    lin = torch.nn.Linear(3, 2)
    base = torch.arange(10.0)
    obj = {"model": lin.state_dict(), "view": base[2:8:2], "base": base,
           "bf": torch.ones(3, dtype=torch.bfloat16), "step": 7, "dt": torch.int32}
    path = tmp_path / "torch.pt"
    torch.save(obj, path)
    got = ember.load(path)
    np.testing.assert_array_equal(got["model"]["weight"].numpy(), lin.weight.detach().numpy())
    np.testing.assert_array_equal(got["view"].numpy(), [2.0, 4.0, 6.0])
    assert got["step"] == 7 and got["dt"] is ember.int32 and got["bf"].dtype == ember.bfloat16
    m = ember.nn.Module()
    m.weight = ember.nn.Parameter(ember.zeros(2, 3))
    m.bias = ember.nn.Parameter(ember.zeros(2))
    m.load_state_dict(got["model"])
    np.testing.assert_array_equal(m.bias.detach().numpy(), lin.bias.detach().numpy())


def test_weights_only_refuses_arbitrary_objects(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"module": torch.nn.ReLU()}, path)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.load(path)

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo pwned",))
    buf = io.BytesIO()
    ember.save({"x": Payload()}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="posix.system|os.system"):
        ember.load(buf)


def test_file_objects_and_single_tensors():
    buf = io.BytesIO()
    ember.save(ember.tensor([1.0, 2.0]), buf)
    buf.seek(0)
    np.testing.assert_array_equal(ember.load(buf).numpy(), [1.0, 2.0])
    buf.seek(0)
    np.testing.assert_array_equal(torch.load(buf).numpy(), [1.0, 2.0])


def test_save_is_atomic_when_pickling_fails(tmp_path):
    path = tmp_path / "ck.pt"
    ember.save({"v": ember.ones(2)}, path)
    with pytest.raises(Exception):
        ember.save({"bad": lambda: 0}, path)  # lambdas cannot be pickled
    np.testing.assert_array_equal(ember.load(path)["v"].numpy(), [1.0, 1.0])
    assert sorted(os.listdir(tmp_path)) == ["ck.pt"]  # no temporary file left behind


def test_legacy_format_is_rejected_clearly(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"a": torch.ones(1)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="legacy format"):
        ember.load(path)


def test_cuda_location_needs_map_location(tmp_path):
    # a checkpoint whose storages were saved from a GPU: rewrite the location string
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2)}, buf)
    import zipfile
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            if n.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            dst.writestr(n, data)
    out.seek(0)
    with pytest.raises(RuntimeError, match="map_location"):
        ember.load(out)
    out.seek(0)
    np.testing.assert_array_equal(ember.load(out, map_location="cpu")["a"].numpy(), [1, 1])


def test_safetensors_round_trip_and_interop(tmp_path):
    from safetensors.torch import load_file as t_load, save_file as t_save
    from ember.utils import safetensors as est
    tensors = {"a": ember.arange(6.0).reshape(2, 3), "b": ember.tensor([1, 2], dtype=ember.int32),
               "h": ember.tensor([1.0, 2.0], dtype=ember.bfloat16)}
    path = tmp_path / "m.safetensors"
    est.save_file(tensors, path, metadata={"format": "pt"})
    t = t_load(str(path))
    np.testing.assert_array_equal(t["a"].numpy(), np.arange(6.0).reshape(2, 3))
    assert t["h"].dtype == torch.bfloat16 and t["b"].dtype == torch.int32
    t_save({"x": torch.ones(2, 2, dtype=torch.float16)}, str(tmp_path / "t.safetensors"))
    e = est.load_file(tmp_path / "t.safetensors")
    assert e["x"].dtype == ember.float16 and e["x"].shape == (2, 2)
    assert est.load(est.save(tensors))["b"].tolist() == [1, 2]
    x = ember.ones(4)
    with pytest.raises(RuntimeError, match="share memory"):
        est.save_file({"a": x, "b": x}, tmp_path / "s.safetensors")
