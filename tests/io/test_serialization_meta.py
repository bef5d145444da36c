"""Saving meta tensors as torch does: dtype, sizes, strides and requires_grad only
(``torch._utils._rebuild_meta_tensor_no_storage``, no storage record, no offset), loaded back
as meta tensors whatever the map_location; files are interchangeable with torch's (the
pickle is byte for byte torch's)."""
import io
import zipfile

import pytest
import torch

import ember


def _objects(lib):
    x = lib.empty(3, 4, device="meta")
    return {"a": x, "view": x.t()[1:], "dense": lib.ones(2),
            "param": lib.nn.Parameter(lib.empty(2, device="meta")),
            "rg": lib.empty(2, 2, device="meta", requires_grad=True),
            "half": lib.empty(2, device="meta", dtype=lib.float16),
            "sd": lib.nn.Linear(3, 2, device="meta").state_dict()}


def _describe(d):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _describe(v)
            continue
        out[k] = (v.device.type, tuple(v.shape), tuple(v.stride()), v.storage_offset(),
                  str(v.dtype).split(".")[1], v.requires_grad, type(v).__name__)
    return out


def _saved(lib):
    buf = io.BytesIO()
    lib.save(_objects(lib), buf)
    return buf.getvalue()


@pytest.mark.parametrize("saver", ("torch", "ember"))
@pytest.mark.parametrize("loader", ("torch", "ember"))
@pytest.mark.parametrize("kw", (dict(weights_only=True), dict(weights_only=False),
                                dict(weights_only=True, map_location="cpu")))
def test_meta_round_trip_across_libraries(saver, loader, kw):
    data = _saved(torch if saver == "torch" else ember)
    got = (torch if loader == "torch" else ember).load(io.BytesIO(data), **kw)
    want = torch.load(io.BytesIO(_saved(torch)), weights_only=True)
    assert _describe(got) == _describe(want)
    assert _describe(got)["view"] == ("meta", (3, 3), (1, 4), 0, "float32", False, "Tensor")


def test_meta_pickle_is_torchs():
    def parts(data):
        z = zipfile.ZipFile(io.BytesIO(data))
        return z.read("archive/data.pkl"), sorted(n for n in z.namelist() if "/data/" in n)
    assert parts(_saved(ember)) == parts(_saved(torch))  # one storage record: the dense one
