"""expand / expand_as / broadcast_to against torch: the argument forms the fast path takes and
the ones it hands to the checked path, the memory layouts the kernel views (contiguous in C or
F order, strided, 0-d, empty), view semantics (shared memory, version counter, writes through
the base) and torch's errors."""
import ml_dtypes
import numpy as np
import pytest
import torch

import ember
from ember._core.dispatch import DispatchMode


def _both(shape, seed=0, layout=None):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    e, t = ember.tensor(a), torch.tensor(a)
    if layout is not None:
        e, t = layout(e), layout(t)
    return e, t


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride()
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("shape,args", [
    ((4, 1, 8), (3, 4, 5, 8)),
    ((4, 1, 8), ((3, 4, 5, 8),)),
    ((4, 1, 8), ([3, 4, 5, 8],)),
    ((4, 1, 8), (torch.Size([3, 4, 5, 8]),)),
    ((4, 1, 8), (-1, 6, -1)),
    ((4, 1, 8), (2, -1, 1, -1)),
    ((4, 1, 8), (4, 1, 8)),
    ((4, 1, 8), (4, 0, 8)),
    ((1,), (0,)),
    ((), (2, 3)),
    ((), ((),)),
    ((0, 1), (2, 0, 5)),
])
def test_argument_forms_match_torch(shape, args):
    e, t = _both(shape)
    eargs = tuple(ember.Size(a) if isinstance(a, torch.Size) else a for a in args)
    _same(e.expand(*eargs), t.expand(*args))


@pytest.mark.parametrize("layout", [
    lambda x: x.t(),                      # F-contiguous: the kernel's constructor path
    lambda x: x[:, ::2],                  # strided: the kernel's as_strided path
    lambda x: x[1:2],                     # an offset into the base's memory
    lambda x: x.expand(2, 4, 6)[:, :1],   # stride 0 already (an expanded tensor expanded)
], ids=["transposed", "strided", "offset", "expanded"])
def test_layouts_match_torch(layout):
    e, t = _both((4, 6), seed=1, layout=layout)
    target = (3,) + tuple(5 if s == 1 else s for s in t.shape)
    _same(e.expand(target), t.expand(target))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_, np.complex64,
                                   ml_dtypes.bfloat16])
def test_dtypes(dtype):
    a = np.arange(3).reshape(3, 1).astype(dtype)
    y = ember.tensor(a).expand(2, 3, 4)
    assert y.dtype == ember.tensor(a).dtype
    np.testing.assert_array_equal(np.asarray(y._data), np.broadcast_to(a, (2, 3, 4)))


def test_view_shares_memory_version_and_writes():
    for make in (lambda x: x.expand(2, 3, 4), lambda x: x.expand_as(ember.zeros(2, 3, 4)),
                 lambda x: ember.broadcast_to(x, (2, 3, 4))):
        x = ember.zeros(3, 1)
        y = make(x)
        assert y._base is x and np.shares_memory(y._data, x._data)
        assert y._data.flags.writeable  # as torch's expanded tensors are
        x.add_(1)
        assert y._version == x._version == 1
        assert y.sum().item() == 24
        y[0, 0, 0] = 5.0  # one element of x, seen at every broadcast position
        assert x[0, 0].item() == 5.0 and y[1, 0, 3].item() == 5.0
        assert x._version == y._version == 2


def test_expand_as_and_broadcast_to_match_torch():
    e, t = _both((4, 1))
    eo, to = _both((2, 4, 3), seed=2)
    _same(e.expand_as(eo), t.expand_as(to))
    _same(ember.broadcast_to(e, (2, 4, 3)), torch.broadcast_to(t, (2, 4, 3)))
    _same(e.broadcast_to((-1, 5)), t.broadcast_to((-1, 5)))
    _same(ember.broadcast_to(ember.tensor(2.0), ()), torch.broadcast_to(torch.tensor(2.0), ()))
    _same(ember.broadcast_to(ember.tensor(2.0), [3]), torch.broadcast_to(torch.tensor(2.0), [3]))


@pytest.mark.parametrize("shape,args", [
    ((2,), (3,)),
    ((2, 3), (3,)),
    ((2,), (-1, 2)),
    ((4, 1), (2, 5, 1)),
    ((2, 2), (-2, 3, 3)),
    ((), ()),
    ((1,), (2.0,)),
    ((1,), (True,)),
    ((1,), ((2.0, 1),)),
])
def test_errors_match_torch(shape, args):
    with pytest.raises(Exception) as te:
        torch.zeros(shape).expand(*args)
    with pytest.raises(type(te.value)) as ee:
        ember.zeros(shape).expand(*args)
    assert str(ee.value).replace("ember", "torch") == str(te.value)


def test_negative_leading_size_is_refused():
    # torch reports an integer overflow of numel here; ember names the size and the dim
    with pytest.raises(RuntimeError, match=r"size of the tensor \(-3\) isn't allowed in a leading"):
        ember.zeros(1).expand(-3, -1)


def test_expand_as_error_names_both_shapes():
    with pytest.raises(RuntimeError) as te:
        torch.zeros(2, 3).expand_as(torch.zeros(3, 4))
    with pytest.raises(RuntimeError) as ee:
        ember.zeros(2, 3).expand_as(ember.zeros(3, 4))
    assert str(ee.value) == str(te.value)


class _Sym(int):
    """An int subclass, as ember.compile's symbolic sizes are."""


class _Params(DispatchMode):
    def __init__(self):
        self.seen = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.seen.append((op.name, kwargs))
        return op(*args, **kwargs)


def test_int_subclasses_and_index_objects_keep_their_path():
    x = ember.zeros(3, 1)
    with _Params() as mode:
        y = x.expand(_Sym(2), 3, np.int64(4))
    assert tuple(y.shape) == (2, 3, 4)
    (name, params), = mode.seen
    assert name == "expand" and params["shape"] == (2, 3, 4)
    assert type(params["shape"][0]) is _Sym  # a symbolic size is not made a plain int


@pytest.mark.parametrize("shape,target", [((4, 1, 8), (3, 4, 5, 8)), ((), (2, 3)),
                                          ((2, 1), (2, -1))])
def test_gradient_matches_torch(shape, target):
    a = np.random.default_rng(3).standard_normal(shape)
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = x.expand(target)
        w = lib.tensor(np.random.default_rng(4).standard_normal(tuple(y.shape)))
        (y * w).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_sum_backward_is_an_expanded_ones():
    for lib in (ember, torch):
        x = lib.randn(3, 4, requires_grad=True)
        x.sum().backward()
        assert x.grad.shape == (3, 4) and bool((x.grad == 1).all())
