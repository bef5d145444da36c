"""Storage conversions, moves, buffers and the legacy per-dtype classes, against torch."""
import sys
import warnings

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:TypedStorage is deprecated:UserWarning")

CASTS = ["bool", "byte", "char", "short", "int", "long", "half", "bfloat16", "float",
         "double", "complex_float", "complex_double", "float8_e4m3fn", "float8_e5m2"]



@pytest.fixture(autouse=True)
def _torch_typed_storage_warning_stays_unspent():
    # torch warns "TypedStorage is deprecated" once per process: these tests must not use
    # up the warning other tests assert
    f = torch.storage._warn_typed_storage_removal
    had = f.__dict__.get("has_warned")
    yield
    if had is None:
        f.__dict__.pop("has_warned", None)
    else:
        f.__dict__["has_warned"] = had

def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*a, **k)


def _name(dt):
    return str(dt).split(".")[1]


@pytest.mark.parametrize("cast", CASTS)
def test_typed_and_untyped_casts_match_torch(cast):
    data = [1.5, -2.0, 0.0, 3.25]
    et, tt = (_quiet(lib.tensor(data).storage) for lib in (ember, torch))
    e, t = getattr(et, cast)(), getattr(tt, cast)()
    assert _name(e.dtype) == _name(t.dtype) and e.size() == t.size()
    np.testing.assert_array_equal(np.array(e.tolist(), dtype=complex),
                                  np.array(t.tolist(), dtype=complex))
    eu, tu = ember.tensor(data).untyped_storage(), torch.tensor(data).untyped_storage()
    e, t = getattr(eu, cast)(), getattr(tu, cast)()  # each byte becomes one element
    assert _name(e.dtype) == _name(t.dtype) and e.size() == t.size() == 16
    np.testing.assert_array_equal(np.array(e.tolist(), dtype=complex),
                                  np.array(t.tolist(), dtype=complex))


def test_same_dtype_cast_returns_the_storage_itself():
    s = _quiet(ember.tensor([1.0]).storage)
    assert s.float() is s and s.double() is not s


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_legacy_storage_classes(lib):
    s = _quiet(lib.FloatStorage, [1, 2])
    assert type(s) is lib.TypedStorage and isinstance(s, lib.FloatStorage)
    assert not isinstance(s, lib.LongStorage) and not isinstance(np.zeros(2), lib.FloatStorage)
    assert s.tolist() == [1.0, 2.0] and _quiet(lib.LongStorage, 3).size() == 3
    assert _quiet(lib.ByteStorage, [1]).type() == "torch.ByteStorage"
    assert s.pickle_storage_type() == "FloatStorage"
    assert _quiet(lib.tensor([1.0]).storage).type() == "torch.FloatStorage"
    assert lib.tensor([1.0]).untyped_storage().type() == "torch.storage.UntypedStorage"
    assert isinstance(_quiet(lib.tensor([1]).storage), lib.LongStorage)
    w = _quiet(lib.FloatStorage, wrap_storage=lib.UntypedStorage(8))
    assert w.size() == 2 and _name(w.dtype) == "float32"
    with pytest.raises(RuntimeError, match="Keyword argument 'dtype' cannot be specified"):
        _quiet(lib.FloatStorage, 2, dtype=lib.float64)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_from_buffer(lib):
    assert lib.FloatStorage.from_buffer(b"\x3f\x80\x00\x00", "big").tolist() == [1.0]
    assert lib.FloatStorage.from_buffer(b"\x00\x00\x80\x3f", "little").tolist() == [1.0]
    native = np.array([2.5, -1.0], dtype=np.float64).tobytes()
    assert lib.TypedStorage.from_buffer(native, sys.byteorder,
                                        dtype=lib.float64).tolist() == [2.5, -1.0]
    u = lib.UntypedStorage.from_buffer(b"\x01\x02\x03\x04", "little", dtype=lib.int16)
    assert type(u) is lib.UntypedStorage and u.tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_copy_clone_resize_byteswap(lib):
    ts = _quiet(lib.tensor([1.0, 2.0]).storage)
    x = lib.tensor([1.0, 2.0])
    xs = _quiet(x.storage)
    assert xs.copy_(_quiet(lib.tensor([5.0, 6.0]).storage)) is xs
    assert x.tolist() == [5.0, 6.0]  # written through to the tensor
    with pytest.raises(RuntimeError, match="size does not match, self was 8 bytes but src "
                                           "was 16 bytes"):
        ts.copy_(_quiet(lib.tensor([5, 6]).storage))
    c = xs.clone()
    c[0] = 0.0
    assert x.tolist() == [5.0, 6.0] and c.tolist() == [0.0, 6.0]
    u = lib.UntypedStorage(3)
    assert u.resizable()
    u.fill_(7)
    u.resize_(5)
    assert u.size() == 5 and u.tolist()[:3] == [7, 7, 7]
    t = _quiet(lib.FloatStorage, [1, 2])
    t.resize_(4)
    assert t.size() == 4 and t.tolist()[:2] == [1.0, 2.0]
    b = lib.tensor([1.0, 2.0]).untyped_storage()
    assert b.byteswap(lib.float32) is None
    assert b.tolist() == [63, 128, 0, 0, 64, 0, 0, 0]
    assert b.new().size() == 0 and type(b.new()) is lib.UntypedStorage


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_moves_and_flags(lib):
    u = lib.tensor([1.0]).untyped_storage()
    t = _quiet(lib.tensor([1.0]).storage)
    assert u.to(device="cpu") is u and u.cpu() is u
    assert t.to(device="cpu").data_ptr() == t.data_ptr()
    assert not u.is_hpu and not t.is_hpu and u.filename is None and t.filename is None
    assert not u.is_pinned() and not t.is_pinned()
    for s in (u, t):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            s.pin_memory()


def test_ember_tensor_storage_is_not_resizable():
    # its bytes are the tensor's NumPy memory, which cannot grow in place
    u = ember.tensor([1.0]).untyped_storage()
    assert not u.resizable()
    with pytest.raises(RuntimeError, match="not resizable"):
        u.resize_(8)
    with pytest.raises(RuntimeError):
        u.cuda()
