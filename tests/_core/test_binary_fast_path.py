"""`dispatch.apply_binary`: ``a + b``, ``a * 2.0``, ``2.0 / a`` ... on plain float32/float64
tensors call the op's ufunc straight away.  Each case must give what the op's kernel gives
through `apply` (bit for bit, same dtype and shape), torch's values and dtypes, the same graph
and gradients, and torch's errors; every other operand pattern must still reach `apply`."""
import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels
from ember._core import dispatch
from ember._core.dispatch import apply, apply_binary
from ember.ops.pointwise import ADD, MUL, SUB, TRUE_DIV

OPS = {"add": ADD, "sub": SUB, "mul": MUL, "div": TRUE_DIV}
TORCH = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}

SCALARS = [2.0, -0.0, 3, 0, float("inf"), float("nan"), 1e-40, 2 ** 60 + 1, -(2 ** 40) + 1, 1e300]


def _arrays(dtype, shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    a.flat[:3] = [0.0, -0.0, np.inf][:a.size][:3] if a.size >= 3 else a.flat[:3]
    return a


def _same(e, t):
    assert e.dtype == getattr(ember, str(t.dtype).split(".")[1])
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_threaded_size_is_the_c_loops():
    assert dispatch._THREADED_SIZE == ckernels.PARALLEL_SIZE


def test_ops_with_a_ufunc_are_the_four_arithmetic_ones():
    from ember._core.op import REGISTRY
    assert sorted(op.name for op in REGISTRY.values() if getattr(op, "ufunc", None)) == \
        ["add", "div", "mul", "sub"]


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((4, 4), (4, 4)), ((3, 1), (1, 5)), ((), ()), ((), (2, 3)),
                                    ((0, 3), (3,)), ((7,), ())])
def test_tensor_tensor_equals_apply_and_torch(name, dtype, shapes):
    op = OPS[name]
    a, b = _arrays(dtype, shapes[0], 0), _arrays(dtype, shapes[1], 1)
    ea, eb = ember.tensor(a), ember.tensor(b)
    fast = apply_binary(op, ea, eb)
    slow = apply(op, (ea, eb), {})
    assert type(fast._data) is np.ndarray
    assert fast._data.dtype is slow._data.dtype
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    _same(fast, TORCH[name](torch.tensor(a), torch.tensor(b)))


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("first", [False, True], ids=["tensor-scalar", "scalar-tensor"])
def test_tensor_scalar_equals_apply_and_torch(name, dtype, scalar, first):
    op = OPS[name]
    a = _arrays(dtype, (3, 4), 2)
    e = ember.tensor(a)
    args = (scalar, e) if first else (e, scalar)
    fast = apply_binary(op, *args)
    slow = apply(op, args, {})
    assert fast._data.dtype is slow._data.dtype
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    t = torch.tensor(a)
    _same(fast, TORCH[name](scalar, t) if first else TORCH[name](t, scalar))


@pytest.mark.parametrize("expr", ["a + b", "a - 2.5", "3 * a", "a / b", "2.0 - a"])
def test_operators_take_it_and_record_torchs_graph(expr, monkeypatch):
    calls = []
    real = dispatch.apply

    def counting(op, args, params):
        calls.append(op.name)
        return real(op, args, params)
    res = []
    for lib in (torch, ember):
        a = lib.tensor([[1.5, -2.0], [0.25, 4.0]], requires_grad=True)
        b = lib.tensor([[3.0, 0.5], [-1.0, 2.0]], requires_grad=True)
        if lib is ember:
            monkeypatch.setattr(dispatch, "apply", counting)
        out = eval(expr)
        monkeypatch.undo()
        out.backward(lib.tensor([[1.0, -1.0], [2.0, 0.5]]))
        res.append((out.detach().numpy(), a.grad.numpy(),
                    None if b.grad is None else b.grad.numpy()))
    assert calls == []  # none reached apply: the fast path computed and recorded them
    for e, t in zip(res[1], res[0]):
        if t is None:
            assert e is None
        else:
            np.testing.assert_array_equal(e, t)


def _reaches_apply(monkeypatch, fn):
    calls = []
    real = dispatch.apply

    def counting(op, args, params):
        calls.append(op.name)
        return real(op, args, params)
    monkeypatch.setattr(dispatch, "apply", counting)
    try:
        return fn(), calls
    finally:
        monkeypatch.undo()


OTHERS = {
    "float16": lambda: ember.ones(3, dtype=ember.float16) + ember.ones(3, dtype=ember.float16),
    "int64": lambda: ember.ones(3, dtype=ember.int64) * ember.ones(3, dtype=ember.int64),
    "mixed dtypes": lambda: ember.ones(3) + ember.ones(3, dtype=ember.float64),
    "complex": lambda: ember.ones(3, dtype=ember.complex64) * 2.0,
    "bool scalar": lambda: ember.ones(3) * True,
    "complex scalar": lambda: ember.ones(3) * 1j,
    "numpy scalar": lambda: ember.ones(3) * np.float64(2.0),
    "parameter": lambda: ember.nn.Parameter(ember.ones(3)) * ember.ones(3),
    "large": lambda: ember.ones(1 << 18) + ember.ones(1 << 18),
}


@pytest.mark.parametrize("name", OTHERS)
def test_other_operands_take_apply(name, monkeypatch):
    out, calls = _reaches_apply(monkeypatch, OTHERS[name])
    assert calls, name
    assert isinstance(out, ember.Tensor)


def test_shape_error_is_torchs():
    msgs = []
    for lib in (torch, ember):
        with pytest.raises(RuntimeError) as info:
            lib.ones(3) + lib.ones(4)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_under_no_grad_and_under_a_mode():
    a = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        out = a * 2.0
    assert out.grad_fn is None and not out.requires_grad
    seen = []

    class Spy(dispatch.DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            seen.append(op.name)
            return op(*args, **kwargs)
    with Spy():
        out = a * 2.0 + a
    assert seen == ["mul", "add"]
    assert out.grad_fn is not None
