"""The quantized dtypes ember.qint8 / quint8 / qint32: names, sizes, saving, and refusal by
plain tensor factories (torch refuses them there too)."""
import io

import pytest
import torch

import ember


@pytest.mark.parametrize("name", ["qint8", "quint8", "qint32"])
def test_quantized_dtypes_like_torch(name):
    d, td = getattr(ember, name), getattr(torch, name)
    assert isinstance(d, ember.dtype) and repr(d) == repr(td).replace("torch.", "ember.")
    assert d.itemsize == td.itemsize
    assert d.is_floating_point is td.is_floating_point is False
    assert d.is_complex is td.is_complex is False
    assert d is not ember.int8 and d != ember.int8


@pytest.mark.parametrize("name", ["qint8", "quint8", "qint32"])
def test_plain_tensors_refuse_quantized_dtypes(name):
    with pytest.raises(RuntimeError):
        torch.tensor([1.0], dtype=getattr(torch, name))
    for make in (lambda d: ember.zeros(3, dtype=d), lambda d: ember.ones(2).to(d),
                 lambda d: ember.tensor([1], dtype=d)):
        with pytest.raises(RuntimeError, match=f"ember.{name} is a quantized dtype"):
            make(getattr(ember, name))


def test_quantized_dtypes_save_load_and_torch_reads_them(tmp_path):
    path = tmp_path / "d.pt"
    ember.save({"a": ember.qint8, "b": ember.quint8, "c": ember.qint32}, path)
    back = ember.load(path)
    assert back == {"a": ember.qint8, "b": ember.quint8, "c": ember.qint32}
    assert torch.load(path) == {"a": torch.qint8, "b": torch.quint8, "c": torch.qint32}
