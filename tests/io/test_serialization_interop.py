"""Files exchanged with torch in both directions: every dtype, conj/neg bits, v2/v3 rebuilds,
tensor attributes, mmap, map_location forms, protocol-2 names and the safe-globals API."""
import collections
import io
import mmap
import pickle

import numpy as np
import pytest
import torch

import ember

_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
           "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
           "float8_e4m3fn", "float8_e5m2"]


def _values(name):
    if name == "bool":
        return [True, False, True]
    if name.startswith(("uint", "int")):
        info = np.iinfo(name)
        return [int(info.min), 7, int(info.max)]
    if name.startswith("complex"):
        return [1 + 2j, -0.5j, 3.0]
    return [1.0, -0.5, 2.0]


def _to_f64(t):
    return t.to(torch.complex128 if t.dtype.is_complex else torch.float64).numpy() \
        if isinstance(t, torch.Tensor) else \
        t.to(ember.complex128 if t.dtype.is_complex else ember.float64).numpy()


@pytest.mark.parametrize("name", _DTYPES)
def test_every_dtype_both_ways(name):
    vals = _values(name)
    tt = torch.tensor(vals, dtype=getattr(torch, name))
    buf = io.BytesIO()
    torch.save({"t": tt, "view": tt[1:]}, buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got["t"].dtype is getattr(ember, name)
    np.testing.assert_array_equal(_to_f64(got["t"]), _to_f64(tt))
    np.testing.assert_array_equal(_to_f64(got["view"]), _to_f64(tt[1:]))
    et = ember.tensor(vals, dtype=getattr(ember, name))
    buf = io.BytesIO()
    ember.save({"t": et, "view": et[1:]}, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["t"].dtype is getattr(torch, name)
    np.testing.assert_array_equal(_to_f64(back["t"]), _to_f64(tt))
    assert back["view"].untyped_storage().data_ptr() == back["t"].untyped_storage().data_ptr()


def test_conj_and_neg_bits_load_with_their_sign():
    z = torch.tensor([1 + 2j, 3 - 1j])
    x = torch.tensor([1.0, -2.0])
    buf = io.BytesIO()
    torch.save({"conj": z.conj(), "neg": x._neg_view(), "negconj": z.conj()._neg_view()}, buf)
    buf.seek(0)
    got = ember.load(buf)
    np.testing.assert_array_equal(got["conj"].numpy(), z.conj().resolve_conj().numpy())
    np.testing.assert_array_equal(got["neg"].numpy(), [-1.0, 2.0])
    np.testing.assert_array_equal(got["negconj"].numpy(),
                                  z.conj()._neg_view().resolve_neg().resolve_conj().numpy())


def test_tensor_attributes_and_parameter_state_both_ways():
    t = torch.ones(2)
    t.note = "hello"
    p = torch.nn.Parameter(torch.zeros(3))
    p.tag = 5
    buf = io.BytesIO()
    torch.save([t, p], buf)
    buf.seek(0)
    et, ep = ember.load(buf)
    assert et.note == "hello" and isinstance(ep, ember.nn.Parameter) and ep.tag == 5
    assert ep.requires_grad
    buf = io.BytesIO()
    ember.save([et, ep], buf)
    buf.seek(0)
    tt, tp = torch.load(buf)
    assert tt.note == "hello" and isinstance(tp, torch.nn.Parameter) and tp.tag == 5


def test_tensor_state_cannot_overwrite_internals():
    t = torch.ones(2)
    t._data = "x"  # noqa: SLF001 - a name that is internal in ember
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="_data"):
        ember.load(buf)


def test_requires_grad_and_shared_views_survive(tmp_path):
    base = torch.arange(12.0).reshape(3, 4)
    obj = {"base": base, "col": base[:, 1], "t": base.t(), "rg": torch.ones(2, requires_grad=True)}
    path = tmp_path / "a.pt"
    torch.save(obj, path)
    got = ember.load(path)
    assert got["rg"].requires_grad and not got["base"].requires_grad
    np.testing.assert_array_equal(got["t"].numpy(), base.t().numpy())
    with ember.no_grad():
        got["base"][0, 1] = 100.0
    assert got["col"][0].item() == 100.0 and got["t"][1, 0].item() == 100.0
    assert got["col"].storage_offset() == 1


def test_mmap_maps_the_file(tmp_path):
    path = tmp_path / "m.pt"
    ember.save({"w": ember.arange(1 << 16, dtype=ember.float32)}, path)
    got = ember.load(path, mmap=True)
    with open("/proc/self/maps") as maps:
        assert str(path) in maps.read()  # the checkpoint itself is mapped into memory
    np.testing.assert_array_equal(got["w"].numpy(), np.arange(1 << 16, dtype=np.float32))
    with ember.no_grad():
        got["w"][0] = -1.0  # MAP_PRIVATE: copy-on-write, the file is unchanged
    assert ember.load(path)["w"][0].item() == 0.0
    with pytest.raises(ValueError, match="file path"):
        ember.load(io.BytesIO(path.read_bytes()), mmap=True)
    t = torch.load(path, mmap=True)
    assert t["w"][5].item() == 5.0


def test_map_location_forms(tmp_path):
    path = tmp_path / "a.pt"
    torch.save({"a": torch.ones(2)}, path)
    for loc in ["cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, location: storage,
                None]:
        got = ember.load(path, map_location=loc)
        np.testing.assert_array_equal(got["a"].numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="CUDA"):
        ember.load(path, map_location="cuda")


def test_protocol2_names_and_python_values_from_torch():
    obj = {"bytes": b"\x00\xffabc", "set": {1, 2}, "complex": 1 - 2j, "od": collections.OrderedDict(a=1),
           "counter": collections.Counter("aab"), "nested": [(1, 2.5, None, True), {"k": "v"}],
           "dtype": torch.bfloat16, "size": torch.Size([2, 3]), "device": torch.device("cpu"),
           "big": 1 << 100}
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got["bytes"] == b"\x00\xffabc" and got["set"] == {1, 2} and got["complex"] == 1 - 2j
    assert got["od"] == {"a": 1} and got["counter"] == {"a": 2, "b": 1}
    assert got["nested"] == [(1, 2.5, None, True), {"k": "v"}] and got["big"] == 1 << 100
    assert got["dtype"] is ember.bfloat16 and got["size"] == (2, 3)
    assert got["device"] == ember.device("cpu")
    # a Python-2-era name goes through the standard compatibility mapping
    pkl = b"\x80\x02c__builtin__\nset\n]K\x07a\x85R."
    out = io.BytesIO()
    import zipfile
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
    out.seek(0)
    assert ember.load(out) == {7}


def test_state_dict_metadata_round_trip():
    lin = torch.nn.Linear(2, 3)
    buf = io.BytesIO()
    torch.save(lin.state_dict(), buf)
    buf.seek(0)
    got = ember.load(buf)
    assert got._metadata == lin.state_dict()._metadata


class _Point:
    def __init__(self, x):
        self.x = x


def test_numpy_and_custom_classes_need_the_allowlist_as_in_torch():
    buf = io.BytesIO()
    torch.save({"n": np.arange(3), "p": _Point(4)}, buf)
    data = buf.getvalue()
    with pytest.raises(pickle.UnpicklingError, match="add_safe_globals"):
        ember.load(io.BytesIO(data))
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(data))
    unsafe = ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    assert sorted(unsafe) == sorted(
        torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)))
    allow = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype(np.int64)),
             _Point]
    with ember.serialization.safe_globals(allow):
        got = ember.load(io.BytesIO(data))
    np.testing.assert_array_equal(got["n"], np.arange(3))
    assert isinstance(got["p"], _Point) and got["p"].x == 4
    assert ember.serialization.get_safe_globals() == []
    got = ember.load(io.BytesIO(data), weights_only=False)
    assert got["p"].x == 4


def test_weights_only_false_maps_torch_names_and_runs_like_pickle():
    buf = io.BytesIO()
    torch.save({"m": torch.nn.Linear(2, 2).state_dict(), "f": _Point(1)}, buf)
    buf.seek(0)
    got = ember.load(buf, weights_only=False)
    assert got["f"].x == 1 and got["m"]["weight"].shape == (2, 2)
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(io.BytesIO(buf.getvalue()), pickle_module=pickle, weights_only=True)


def test_serialization_options_match_torch():
    assert ember.serialization.get_default_mmap_options() == \
        torch.serialization.get_default_mmap_options()
    with ember.serialization.set_default_mmap_options(mmap.MAP_SHARED):
        assert ember.serialization.get_default_mmap_options() == mmap.MAP_SHARED
    assert ember.serialization.get_default_mmap_options() == mmap.MAP_PRIVATE
    with pytest.raises(ValueError):
        ember.serialization.set_default_mmap_options(12345)
    assert ember.serialization.get_default_load_endianness() is None
    assert ember.serialization.check_module_version_greater_or_equal(np, (1, 0))
    assert not ember.serialization.check_module_version_greater_or_equal(np, (99, 0))
