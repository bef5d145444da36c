"""Tensor.set_, as_strided_ (function and method), torch.resize_as_ and torch.empty_permuted:
values, sizes, strides, offsets, memory sharing and errors vs torch."""
import warnings

import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _layout(t):
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset(), t.tolist())


def _pair(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage deprecation, on both sides
        return fn(torch), fn(ember)


def test_set_from_tensors_and_storages():
    cases = [
        lambda L: L.zeros(2).set_(L.arange(6.)[1:]),
        lambda L: L.zeros(3).set_(L.arange(6.).untyped_storage(), 1, (2, 2), (1, 2)),
        lambda L: L.zeros(3).set_(L.arange(6.).storage(), 2, (2,)),
        lambda L: L.zeros(3).set_(L.arange(6.).untyped_storage()),
    ]
    for case in cases:
        t, e = _pair(case)
        assert _layout(e) == _layout(t)
    t, e = _pair(lambda L: L.zeros(3).set_())
    assert (tuple(e.shape), e.tolist()) == (tuple(t.shape), t.tolist())


@LIBS
def test_set_shares_memory(lib):
    x = lib.arange(6.)
    y = lib.zeros(2).set_(x.untyped_storage(), 1, (2, 2), (1, 2))
    y.add_(100)
    assert x.tolist() == [0., 101., 102., 103., 104., 5.]
    z = lib.zeros(1).set_(x)
    z[0] = -1
    assert x[0].item() == -1


@pytest.mark.parametrize("call", [
    lambda L: L.zeros(3, requires_grad=True).set_(L.arange(3.)),
    lambda L: L.zeros(3).set_(L.arange(3)),
    lambda L: L.arange(6.).as_strided_((3,), (1,), 4),
    lambda L: L.ones(3, requires_grad=True).as_strided_((2,), (1,)),
    lambda L: L.empty_permuted((2, 3, 4), (0, 2)),
])
def test_errors(call):
    with pytest.raises(Exception) as te:
        call(torch)
    with pytest.raises(type(te.value)):
        call(ember)


def test_as_strided_():
    def chain(L):
        a = L.arange(6.)
        out = [_layout(a.as_strided_((2, 2), (1, 2), 1))]
        out.append(_layout(L.as_strided_(a, (3,), (1,), 2)))
        out.append(_layout(a.as_strided_((2,), (2,))))
        b = L.arange(6.)[2:]
        out.append(_layout(b.as_strided_((2,), (1,))))
        return out
    t, e = _pair(chain)
    assert e == t


def test_resize_as_and_empty_permuted():
    t, e = _pair(lambda L: L.resize_as_(L.zeros(2, 3), L.ones(5)).shape)
    assert tuple(e) == tuple(t)
    for size, perm in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)), ((5,), (0,)), ((), ())):
        t, e = _pair(lambda L: L.empty_permuted(size, perm))
        assert (tuple(e.shape), e.stride()) == (tuple(t.shape), t.stride())
    t, e = _pair(lambda L: L.empty_permuted((2, 3), (1, 0), dtype=L.float64,
                                            requires_grad=True))
    assert e.dtype == ember.float64 and e.requires_grad and e.is_leaf
