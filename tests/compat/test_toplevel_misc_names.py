"""Top-level names torch programs meet (error classes, ldexp_, hash_tensor, slice_inverse,
from_file and Storage.from_file, Tensor.module_load, the COO accessors on strided tensors,
torch.fft.Tensor, torch.types.Storage), checked against torch."""
import os
import pathlib
import warnings

import numpy as np
import pytest

import ember

import torch


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value).__name__, str(e.value)


def test_error_classes():
    for name in ("AcceleratorError", "OutOfMemoryError", "FatalError"):
        e, t = getattr(ember, name), getattr(torch, name)
        assert [c.__name__ for c in e.__mro__] == [c.__name__ for c in t.__mro__]
        with pytest.raises(RuntimeError if issubclass(t, RuntimeError) else Exception):
            raise e("boom")


def test_ldexp_():
    x, e = torch.tensor([1.0, -2.5, 3.0]), torch.tensor([2, -1, 0])
    xe = ember.tensor(x.numpy())
    assert ember.ldexp_(xe, ember.tensor(e.numpy())) is xe
    torch.ldexp_(x, e)
    np.testing.assert_array_equal(xe.numpy(), x.numpy())


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor([1.0, 2.0, 3.0]),
    lambda lib: lib.tensor([[1, 2], [3, 4]]),
    lambda lib: lib.tensor([True, False, True]),
    lambda lib: lib.tensor([1.0, -2.0], dtype=lib.float16),
    lambda lib: lib.tensor([-1, 5], dtype=lib.int8),
    lambda lib: lib.tensor([7, 9], dtype=lib.uint8),
    lambda lib: lib.arange(24.0).reshape(2, 3, 4),
])
@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": -1, "keepdim": True},
                                {"dim": (0, 1)}])
def test_hash_tensor(make, kw):
    t, e = make(torch), make(ember)
    if "dim" in kw and isinstance(kw["dim"], tuple) and t.dim() < 2:
        return
    r_t, r_e = torch.hash_tensor(t, **kw), ember.hash_tensor(e, **kw)
    assert r_e.dtype == ember.uint64 and tuple(r_e.shape) == tuple(r_t.shape)
    np.testing.assert_array_equal(r_e.numpy(), r_t.numpy())
    np.testing.assert_array_equal(e.hash_tensor(**kw).numpy(), r_t.numpy())


def test_hash_tensor_errors():
    cases = [lambda lib: lib.hash_tensor(lib.tensor([1 + 2j])),
             lambda lib: lib.hash_tensor(lib.tensor([1.0]), mode=1),
             lambda lib: lib.hash_tensor(lib.zeros(0)),
             lambda lib: lib.hash_tensor(lib.tensor([1, 2], dtype=lib.uint64))]
    for case in cases:
        assert _error(lambda: case(ember)) == _error(lambda: case(torch))
    assert _error(lambda: ember.hash_tensor(ember.zeros(0, 2), 0)) == \
        _error(lambda: torch.hash_tensor(torch.zeros(0, 2), 0))
    np.testing.assert_array_equal(ember.hash_tensor(ember.zeros(0, 2), 1).numpy(),
                                  torch.hash_tensor(torch.zeros(0, 2), 1).numpy())


def test_slice_inverse():
    for lib in (torch, ember):
        x = lib.arange(12.0).reshape(3, 4)
        v = x[:, 1:3]
        r = lib.slice_inverse(v, x, 1, 1, 3)
        assert tuple(r.shape) == (3, 4) and r.stride() == (4, 1)
        assert r.data_ptr() == x.data_ptr()
        assert bool((r == x).all())
        r2 = v.slice_inverse(x, 1, 1, 3)
        r2[0, 0] = -1.0
        assert float(x[0, 0]) == -1.0  # a view of the same memory
        v1 = x[1:]
        r3 = lib.slice_inverse(v1, x, 0, 1)
        assert r3.storage_offset() == 0 and tuple(r3.shape) == (3, 4)


def test_from_file_shared_and_private(tmp_path):
    out = {}
    for lib in (torch, ember):
        p = str(tmp_path / f"{lib.__name__}.bin")
        t = lib.from_file(p, shared=True, size=4, dtype=lib.float32)
        assert os.path.getsize(p) == 16 and t.tolist() == [0.0] * 4
        t[1] = 5.0
        del t
        raw = pathlib.Path(p).read_bytes()
        t = lib.from_file(p, shared=False, size=4, dtype=lib.float32)
        t[0] = 7.0
        assert pathlib.Path(p).read_bytes() == raw  # private writes stay private
        i = lib.from_file(p, size=2, dtype=lib.int32)
        out[lib] = (raw, t.tolist(), i.tolist(), i.dtype.itemsize)
        missing = str(tmp_path / "missing.bin")
        out[lib] += (_error(lambda: lib.from_file(p, size=10, dtype=lib.float32)
                            )[1].replace(p, "P"),
                     _error(lambda: lib.from_file(missing, size=2))[1].replace(missing, "M"))
    assert out[ember] == out[torch]


def test_storage_from_file(tmp_path, torch_typed_storage_warning_state):
    p = str(tmp_path / "s.bin")
    np.arange(4, dtype=np.float32).tofile(p)
    warnings.simplefilter("ignore", UserWarning)  # TypedStorage's deprecation, both sides
    for lib in (torch, ember):
        u = lib.UntypedStorage.from_file(p, False, 8)
        assert u.nbytes() == 8
        assert bytes(u.tolist()) == np.arange(2, dtype=np.float32).tobytes()
        f = lib.FloatStorage.from_file(p, False, 3)
        assert f.tolist() == [0.0, 1.0, 2.0] and isinstance(f, lib.FloatStorage)
        s = lib.UntypedStorage.from_file(str(tmp_path / f"new_{lib.__name__}.bin"), True, 6)
        assert s.nbytes() == 6 and os.path.getsize(str(tmp_path / f"new_{lib.__name__}.bin")) == 6
    assert _error(lambda: ember.TypedStorage.from_file(p, False, 2)) == \
        _error(lambda: torch.TypedStorage.from_file(p, False, 2))


def test_module_load():
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2))
        other = lib.tensor([3.0, 4.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            p.module_load(other)  # load_state_dict calls it under no_grad
        with lib.no_grad():
            r = p.module_load(other)
        assert r is not p and r is not other and not r.requires_grad
        assert p.tolist() == [3.0, 4.0] and r.tolist() == [3.0, 4.0]
        r = lib.zeros(2).module_load(other, assign=True)
        assert r.tolist() == [3.0, 4.0] and not r.requires_grad and r is not other


def test_coo_accessors_on_strided_and_smm():
    for name in ("coalesce", "indices", "values", "is_coalesced"):
        assert _error(lambda: getattr(ember.zeros(2), name)()) == \
            _error(lambda: getattr(torch.zeros(2), name)())
    assert _error(lambda: ember.zeros(2, 2).smm(ember.eye(2))) == \
        _error(lambda: torch.zeros(2, 2).smm(torch.eye(2)))
    warnings.simplefilter("ignore", UserWarning)  # torch: sparse invariant checks disabled
    i, v = [[0, 1, 1], [1, 0, 0]], [1.0, 2.0, 3.0]
    s_t = torch.sparse_coo_tensor(torch.tensor(i), torch.tensor(v), (2, 2))
    s_e = ember.sparse_coo_tensor(ember.tensor(i), ember.tensor(v), (2, 2))
    m = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    r_t, r_e = s_t.smm(torch.tensor(m)), s_e.smm(ember.tensor(m))
    assert r_e.layout == ember.sparse_coo
    np.testing.assert_allclose(r_e.to_dense().numpy(), r_t.to_dense().numpy())
    assert s_e.is_coalesced() == s_t.is_coalesced()
    c_e, c_t = s_e.coalesce(), s_t.coalesce()
    np.testing.assert_array_equal(c_e.indices().numpy(), c_t.indices().numpy())
    np.testing.assert_array_equal(c_e.values().numpy(), c_t.values().numpy())


def test_fft_tensor_and_types_storage():
    assert ember.fft.Tensor is ember.Tensor and torch.fft.Tensor is torch.Tensor
    import importlib
    types = importlib.import_module("ember.types")
    assert "Storage" in types.__all__
    assert not isinstance(ember.UntypedStorage(2), types.Storage)
    assert not isinstance(torch.UntypedStorage(2), torch.types.Storage)
