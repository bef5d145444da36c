"""Tensor.view's two signatures as torch's: view(dtype) and view(size), positional or by
keyword, torch's TypeError for other combinations, and torch's errors for a dtype view whose
element size differs and the strides do not allow it."""
import pytest
import torch

import ember


@pytest.mark.parametrize("call", [
    lambda lib, t: t.view(dtype=lib.int32), lambda lib, t: t.view(size=(3, 2)),
    lambda lib, t: t.view(size=[6]), lambda lib, t: t.view(-1, 2), lambda lib, t: t.view((3, 2)),
    lambda lib, t: t.view(lib.int16), lambda lib, t: t.view(lib.uint8),
    lambda lib, t: lib.zeros(4, 4)[:, :2].view(lib.float64)])
def test_accepted_as_torch(call):
    got = call(ember, ember.arange(6.0).view(2, 3))
    want = call(torch, torch.arange(6.0).view(2, 3))
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.stride() == want.stride()


@pytest.mark.parametrize("call", [
    lambda lib, t: t.view(dtype=lib.int32, size=(6,)), lambda lib, t: t.view(2, dtype=lib.int32),
    lambda lib, t: t.view(), lambda lib, t: t.view(size=6)])
def test_invalid_combinations_raise_torch_type_error(call):
    with pytest.raises(TypeError) as want:
        call(torch, torch.zeros(2, 3))
    with pytest.raises(TypeError) as got:
        call(ember, ember.zeros(2, 3))
    assert "view() received an invalid combination of arguments" in str(got.value)
    assert str(want.value).split(" but")[0] == str(got.value).split(" but")[0]


@pytest.mark.parametrize("call", [
    lambda lib: lib.zeros(2, 3).view(lib.float64), lambda lib: lib.zeros(2, 3).t().view(lib.float64),
    lambda lib: lib.zeros(()).view(lib.float64), lambda lib: lib.zeros(8)[1:].view(lib.float64),
    lambda lib: lib.zeros(9)[1:].view(lib.float64), lambda lib: lib.zeros(4, 3)[:, :2].view(lib.float64),
    lambda lib: lib.zeros(4, 3).t().view(lib.int16)])
def test_element_size_errors_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(ember)
    assert str(got.value) == str(want.value)
