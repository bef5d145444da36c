"""The Tensor API vs torch: metadata, conversions, repr, casts, memory sharing, versions."""
import warnings

import numpy as np
import pytest
import torch

import ember


def both(fn):
    return fn(ember), fn(torch)


def test_metadata():
    e, t = both(lambda lib: lib.arange(24.0).reshape(2, 3, 4))
    assert tuple(e.shape) == tuple(t.shape) and e.size() == t.size()
    assert e.size(1) == t.size(1) and e.size(-1) == t.size(-1)
    assert e.dim() == t.dim() == e.ndim and e.numel() == t.numel()
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
    assert str(e.device) == str(t.device) == "cpu"
    assert e.requires_grad is t.requires_grad is False and e.is_leaf and t.is_leaf
    assert e.stride() == t.stride() and e.is_contiguous() == t.is_contiguous()
    assert repr(e.shape) == repr(t.shape).replace("torch", "ember")
    with pytest.raises(IndexError):
        t.size(3)
    with pytest.raises(IndexError):
        e.size(3)
    for f in (lambda x: x[0].T, lambda x: x.mT, lambda x: x.transpose(0, 2), lambda x: x[:, ::2]):
        ev, tv = f(e), f(t)
        assert tuple(ev.shape) == tuple(tv.shape) and ev.stride() == tv.stride()
        assert ev.is_contiguous() == tv.is_contiguous()
        np.testing.assert_array_equal(ev.contiguous().numpy(), tv.contiguous().numpy())
        assert ev.contiguous().is_contiguous()


def test_H_and_mH_conjugate():
    a = np.array([[1 + 2j, 3 - 1j], [0.5j, 2]], dtype=np.complex64)
    e, t = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    np.testing.assert_array_equal(e.H.numpy(), t.H.resolve_conj().numpy())
    np.testing.assert_array_equal(e.mH.numpy(), t.mH.resolve_conj().numpy())


def test_item_tolist_scalars():
    e, t = both(lambda lib: lib.tensor([[1.5, -2.0], [3.0, 4.25]]))
    assert e.tolist() == t.tolist()
    assert e[0, 1].item() == t[0, 1].item() and type(e[0, 1].item()) is float
    ei, ti = both(lambda lib: lib.tensor([7]))
    assert ei.item() == ti.item() and type(ei.item()) is int
    assert int(ei) == 7 and float(ei) == 7.0 and bool(ei) is True
    assert [10, 20, 30][ei - 6] == 20  # __index__
    assert both(lambda lib: lib.tensor(True))[0].item() is True
    with pytest.raises(RuntimeError):
        t.item()
    with pytest.raises(RuntimeError):
        e.item()
    with pytest.raises(RuntimeError):
        bool(t)
    with pytest.raises(RuntimeError):
        bool(e)
    with pytest.raises(TypeError):
        [1, 2][ember.tensor(1.0)]
    assert complex(ember.tensor(1 + 2j)) == complex(torch.tensor(1 + 2j))


def test_numpy_shares_memory_and_array_protocols():
    e = ember.zeros(3)
    n = e.numpy()
    n[0] = 5
    assert e[0].item() == 5
    e.add_(1)
    assert n.tolist() == [6, 1, 1]
    assert np.asarray(e) is n or np.shares_memory(np.asarray(e), n)
    assert np.array(e, dtype=np.float64).dtype == np.float64
    r = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        r.numpy()
    with pytest.raises(RuntimeError):
        torch.ones(2, requires_grad=True).numpy()
    assert r.detach().numpy().tolist() == [1.0, 1.0]


def test_numpy_of_a_tensor_requiring_grad_outside_grad_mode():
    # torch refuses only in grad mode: botorch reads its parameters as arrays under no_grad
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(3, dtype=lib.float64))
        with lib.no_grad():
            a = p.view(-1).numpy()
            assert np.asarray(p).tolist() == [1.0] * 3
        with lib.inference_mode():
            assert p.numpy().tolist() == [1.0] * 3
        a[0] = 4.0                          # shares memory
        assert p[0].item() == 4.0
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires "
                                               "grad"):
            np.asarray(p)


def test_dlpack_round_trip():
    e = ember.arange(6.0).reshape(2, 3)
    n = np.from_dlpack(e)
    assert n.shape == (2, 3) and np.shares_memory(n, e.numpy())
    t = torch.from_dlpack(e)
    np.testing.assert_array_equal(t.numpy(), e.numpy())
    back = ember.from_numpy(np.from_dlpack(torch.arange(4)))
    assert back.tolist() == [0, 1, 2, 3]


def _repr_pair(fn):
    e, t = both(fn)
    return repr(e), repr(t).replace("torch", "ember")


REPRS = {
    "ints": lambda lib: lib.tensor([1, 2, 3]),
    "neg ints": lambda lib: lib.tensor([[-1, 20], [300, -4000]]),
    "int floats": lambda lib: lib.tensor([1.0, 2.0, -3.0]),
    "floats": lambda lib: lib.tensor([1.5, 2.25, -3.125]),
    "mixed": lambda lib: lib.tensor([0.1, 100.0, 2.0]),
    "large": lambda lib: lib.tensor([1e10, 1.0]),
    "small": lambda lib: lib.tensor([1e-5, 1.0]),
    "tiny": lambda lib: lib.tensor([1e-8, 2e-8]),
    "huge ints": lambda lib: lib.tensor([1e9, 2e9]),
    "bool": lambda lib: lib.tensor([True, False]),
    "0d": lambda lib: lib.tensor(3.5),
    "0d int": lambda lib: lib.tensor(-7),
    "empty": lambda lib: lib.tensor([]),
    "empty 2d": lambda lib: lib.zeros(0, 3),
    "2d": lambda lib: lib.arange(6.0).reshape(2, 3) / 7,
    "3d": lambda lib: lib.arange(24).reshape(2, 3, 4),
    "summarized": lambda lib: lib.arange(2000.0),
    "summarized 2d": lambda lib: lib.arange(3000).reshape(30, 100),
    "float64": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float64),
    "int32": lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    "float16": lambda lib: lib.tensor([1.5, 2.0], dtype=lib.float16),
    "requires_grad": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    "grad_fn": lambda lib: lib.tensor([1.0, 2.0], requires_grad=True) * 2,
    "nan inf": lambda lib: lib.tensor([float("nan"), float("inf"), -float("inf"), 1.5]),
    "long row": lambda lib: lib.arange(40.0) / 3,
    "complex": lambda lib: lib.tensor([1 + 2j, -0.5 - 1j]),
    "negative zero": lambda lib: lib.tensor([-0.0, 1.0]),
}


@pytest.mark.parametrize("name", sorted(REPRS))
def test_repr_matches_torch(name):
    e, t = _repr_pair(REPRS[name])
    assert e == t


def test_casts():
    x = np.array([1.7, -2.2, 0.0], dtype=np.float32)
    e, t = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    for m in ("float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte",
              "bool", "cfloat", "cdouble"):
        ec, tc = getattr(e, m)(), getattr(t, m)()
        assert str(ec.dtype) == str(tc.dtype).replace("torch", "ember"), m
        np.testing.assert_array_equal(np.asarray(ec.tolist()), np.asarray(tc.tolist()), m)
    for d in ("int64", "float64", "uint8", "complex64"):
        assert e.to(getattr(ember, d)).tolist() == t.to(getattr(torch, d)).tolist()
    assert e.to(ember.float32) is e and t.to(torch.float32) is t
    assert e.to(ember.float32, copy=True) is not e
    assert e.type() == t.type() == "torch.FloatTensor"
    assert e.long().type() == "torch.LongTensor"
    assert e.type(ember.float64).dtype is ember.float64
    assert e.to(ember.zeros(1, dtype=ember.int16)).dtype is ember.int16
    assert e.type_as(ember.zeros(1, dtype=ember.int32)).dtype is ember.int32


def test_clone_detach_share():
    e = ember.tensor([1.0, 2.0], requires_grad=True)
    c = e.clone()
    assert c.requires_grad and c.grad_fn is not None and not c.is_leaf
    d = e.detach()
    assert not d.requires_grad and d.is_leaf
    assert d.data_ptr() == e.data_ptr()
    d.zero_()
    assert e.tolist() == [0.0, 0.0]
    assert e._version == d._version == 1
    v = e[0]
    v.detach().fill_(3.0)
    assert e.tolist() == [3.0, 0.0]
    t = torch.tensor([1.0], requires_grad=True)
    t.detach().zero_()  # torch allows this even with grad mode on
    assert t.item() == 0.0
    assert c.data_ptr() != e.data_ptr()


def test_requires_grad_rules():
    x = ember.zeros(2)
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.zeros(2, dtype=lib.int64).requires_grad_()
        y = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError):
            y.requires_grad_(False)


def test_len_iter_hash():
    e, t = both(lambda lib: lib.arange(6).reshape(3, 2))
    assert len(e) == len(t) == 3
    assert [r.tolist() for r in e] == [r.tolist() for r in t]
    for lib in (ember, torch):
        with pytest.raises(TypeError):
            len(lib.tensor(1))
        with pytest.raises(TypeError):
            iter(lib.tensor(1))
    a, b = ember.zeros(1), ember.zeros(1)
    assert hash(a) != hash(b) and len({a, b}) == 2 and {a: 1}[a] == 1


def test_views_share_memory_and_version():
    base = ember.zeros(2, 3)
    v = base[0]
    w = base.view(6)
    assert base._version == 0
    v.add_(1)
    assert base.tolist()[0] == [1.0, 1.0, 1.0] and w.tolist()[:3] == [1.0, 1.0, 1.0]
    assert base._version == v._version == w._version == 1
    base.mul_(2)
    assert v._version == 2
    assert base.data_ptr() == w.data_ptr()
    t = torch.zeros(2, 3)
    tv = t[0]
    tv.add_(1)
    t.mul_(2)
    assert tv._version == v._version


def test_inplace_result_type_errors():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.tensor([1, 2]).add_(1.5)
        with pytest.raises(RuntimeError):
            lib.tensor([1, 2]).mul_(lib.tensor([1.5, 2.0]))
        with pytest.raises(RuntimeError):
            lib.tensor([True]).add_(2)
        with pytest.raises(RuntimeError):
            lib.tensor([1.0]).add_(1j)
        x = lib.tensor([1.0, 2.0])
        x.add_(lib.tensor([1, 2]))  # int into float is fine
        assert x.tolist() == [2.0, 4.0]


def test_operator_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            -lib.tensor([True])
        with pytest.raises(RuntimeError):
            lib.tensor([True]) - lib.tensor([False])
        with pytest.raises(TypeError):
            ~lib.tensor([1.0])
        with pytest.raises(RuntimeError):
            lib.tensor([1, 2]) ** -1
        with pytest.raises(TypeError):
            lib.maximum(lib.tensor([1.0]), 2)
        with pytest.raises(RuntimeError):
            lib.tensor([1, 2]) // 0
        with pytest.raises(RuntimeError):
            lib.tensor([1.0, 2.0]) + lib.tensor([1.0, 2.0, 3.0])


def test_messages():
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        ember.tensor([True]) - ember.tensor([True])
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for "
                       "'Float'"):
        ember.tensor([1.0]) & ember.tensor([1.0])
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match the size of "
                       r"tensor b \(3\) at non-singleton dimension 0"):
        ember.ones(2) * ember.ones(3)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                       "output type Long"):
        ember.tensor([1, 2]).add_(1.5)
    with pytest.raises(TypeError, match="argument 'other'"):
        ember.atan2(ember.ones(2), 1.0)


def test_integer_arithmetic_wraps_like_torch():
    for f in (lambda lib: lib.tensor([0, 5, 200], dtype=lib.uint8) - 3,
              lambda lib: lib.tensor([0, 5, 200], dtype=lib.uint8) + 300,
              lambda lib: lib.tensor([100], dtype=lib.int8) * 3,
              lambda lib: lib.clamp(lib.tensor([0, 5], dtype=lib.uint8), min=-2),
              lambda lib: lib.tensor([-2, -1, 1, 2]) ** lib.tensor([-1, -3, -2, -1])):
        e, t = both(f)
        assert e.tolist() == t.tolist() and str(e.dtype)[6:] == str(t.dtype)[6:]


def test_where_uint8_condition_warns():
    with pytest.warns(UserWarning, match="uint8 condition"):
        r = ember.where(ember.tensor([1, 0], dtype=ember.uint8), 1.0, 2.0)
    assert r.tolist() == [1.0, 2.0]


def test_format_and_zero_dim():
    assert f"{ember.tensor(2.5):.2f}" == f"{torch.tensor(2.5):.2f}"
    e = ember.tensor(3)
    assert e.dim() == 0 and e.shape == () and e.numel() == 1 and e.stride() == ()


def test_legacy_constructor():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = ember.Tensor(2, 3), torch.Tensor(2, 3)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.float32
    assert ember.Tensor([1, 2]).tolist() == torch.Tensor([1, 2]).tolist()
    assert ember.Tensor([1, 2]).dtype is ember.float32


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_version_is_an_int_counting_in_place_writes(lib):
    """``Tensor._version`` is an int, as torch's (libraries compare it to skip recomputing):
    0 before any write, shared by views, not by clones or detached copies' clones."""
    x = lib.zeros(4)
    assert type(x._version) is int and x._version == 0
    v = x[1:]
    v.add_(1)
    x[0] = 2.0
    assert x._version == v._version == 2 and x.detach()._version == 2
    c = x.clone()
    c.mul_(3)
    assert c._version == 1 and x._version == 2
