"""Tensor methods of torch's legacy/static-shape surface (ember.ops.tensor_extras), against
torch: apply_/map_/map2_, resize/resize_as, nonzero_static, new_empty_strided, is_set_to,
storage_type, name."""
import warnings

import numpy as np
import pytest
import torch

import ember

pytestmark = pytest.mark.filterwarnings("ignore:TypedStorage is deprecated:UserWarning")

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


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


def test_apply_map_map2_match_torch():
    a = np.arange(6.0).reshape(2, 3)
    b = np.array([10.0, 20.0, 30.0])
    res = []
    for lib in (torch, ember):
        y = lib.tensor(a)
        assert y.apply_(lambda v: v * v - 1) is y
        r1 = y.clone()
        assert y.map_(lib.tensor(b), lambda p, q: p + 2 * q) is y  # b broadcast over rows
        r2 = y.clone()
        y.map2_(lib.tensor(a), lib.tensor(b), lambda p, q, s: p - q * s)
        res.append([r1.numpy(), r2.numpy(), y.numpy()])
    for t, e in zip(*res):
        np.testing.assert_array_equal(e, t)
    ints = ember.arange(4).apply_(lambda v: v * 3)
    assert ints.tolist() == torch.arange(4).apply_(lambda v: v * 3).tolist()
    assert ints.dtype is ember.int64


@LIBS
def test_apply_errors(lib):
    x = lib.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires "
                                           r"grad"):
        x.apply_(lambda v: v)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        lib.ones(3).map_(lib.ones(2), lambda p, q: p)


def test_apply_bumps_the_version_counter():
    x = ember.ones(3)
    v = x._version
    x.apply_(lambda v: v + 1)
    assert x._version == v + 1


@LIBS
def test_out_of_place_resize(lib):
    z = lib.arange(6.0)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        r = z.resize(3, 2)
    assert tuple(r.shape) == (3, 2) and r.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert tuple(z.shape) == (6,)
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert tuple(z.resize_as(lib.ones(2, 3)).shape) == (2, 3)
    with pytest.warns(UserWarning), pytest.raises(
            RuntimeError, match="requested resize to 4 \\(4 elements in total\\), but the given "
                                "tensor has a size of 6 \\(6 elements\\)"):
        z.resize(4)


@pytest.mark.parametrize("data,size,fill", [
    ([0, 1, 0, 2], 3, -1), ([[0, 1], [2, 0]], 1, -5), ([[0.0, 1.5], [2.0, 3.0]], 5, 7),
    ([[0.0, 0.0]], 0, -1), (3.0, 2, -1), ([], 2, 9)])
def test_nonzero_static_matches_torch(data, size, fill):
    t = torch.nonzero_static(torch.tensor(data), size=size, fill_value=fill)
    e = ember.nonzero_static(ember.tensor(data), size=size, fill_value=fill)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.int64
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    np.testing.assert_array_equal(ember.tensor(data).nonzero_static(size=size,
                                                                    fill_value=fill).numpy(),
                                  t.numpy())


@LIBS
def test_nonzero_static_rejects_negative_size(lib):
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        lib.nonzero_static(lib.tensor([1]), size=-1)


@LIBS
def test_new_empty_strided(lib):
    x = lib.ones(3)
    y = x.new_empty_strided((2, 3), (1, 2))
    assert tuple(y.shape) == (2, 3) and y.stride() == (1, 2) and y.dtype == x.dtype
    z = x.new_empty_strided((2,), (1,), dtype=lib.int64, requires_grad=False)
    assert z.dtype == lib.int64 and not z.requires_grad
    assert x.new_empty_strided((2,), (1,), requires_grad=True).requires_grad


@LIBS
def test_is_set_to_storage_type_name(lib):
    x = lib.tensor([1.0, 2.0, 3.0])
    assert x.is_set_to(x) and x.is_set_to(x.view(3)) and x.is_set_to(x[:])
    assert not x.is_set_to(x.clone()) and not x.is_set_to(x[1:])
    assert not x.is_set_to(x.view(3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage is deprecated
        assert x.storage_type() is lib.FloatStorage
        assert lib.tensor([1]).storage_type() is lib.LongStorage
    assert x.name is None
