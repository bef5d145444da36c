"""`dispatch.apply_unary`: ``t.exp()``, ``-t``, ``ember.tanh(t)`` ... on a plain float32/float64
tensor below the eager C kernels' size call the op's ufunc straight away.  Each op must give
what its kernel gives through `apply` (bit for bit), torch's gradients through the recorded
node, and every other operand must still reach `apply`."""
import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels
from ember._core import dispatch
from ember._core.dispatch import apply, apply_unary
from ember._core.op import REGISTRY

UNARY = sorted(name for name, op in REGISTRY.items()
               if getattr(op, "ufunc", None) is not None and op.ufunc.nin == 1)

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 1e-30, 88.0, 710.0,
            -1e-7, 3.0e38]


def test_unary_size_is_the_c_kernels():
    assert dispatch._UNARY_C_SIZE == ckernels.MIN_SIZE


def test_the_ops_with_a_ufunc():
    assert UNARY == ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh",
                     "exp", "exp2", "expm1", "log", "log10", "log1p", "log2", "neg", "sin",
                     "sinh", "sqrt", "tan", "tanh"]
    assert all(REGISTRY[n].differentiable and not REGISTRY[n].view for n in UNARY)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_equals_the_kernel_bit_for_bit(name, dtype):
    op = REGISTRY[name]
    rng = np.random.default_rng(0)
    a = np.concatenate([np.array(SPECIALS), rng.standard_normal(200) * 3,
                        rng.uniform(-1, 1, 200)]).astype(dtype)
    for arr in (a, a.reshape(6, -1)[:, ::2], np.asarray(a[5])):  # strided and 0-d too
        x = ember.from_numpy(arr)
        fast = apply_unary(op, x)
        slow = apply(op, (x,), {})
        assert type(fast._data) is np.ndarray
        assert fast._data.dtype is slow._data.dtype and fast.shape == slow.shape
        np.testing.assert_array_equal(fast.numpy(), slow.numpy())


@pytest.mark.parametrize("name", ["tanh", "exp", "neg", "abs", "sqrt", "log1p"])
def test_gradients_match_torch(name):
    res = []
    for lib in (torch, ember):
        x = lib.tensor([0.25, 1.5, 2.0, 0.75], dtype=lib.float64, requires_grad=True)
        fn = {"neg": lambda t: -t, "abs": abs}.get(name, getattr(lib, name, None))
        y = fn(x) if name in ("neg", "abs") else getattr(x, name)()
        y.backward(lib.tensor([1.0, -2.0, 0.5, 3.0], dtype=lib.float64))
        res.append((y.detach().numpy(), x.grad.numpy(), type(y.grad_fn).__name__))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-14)  # NumPy's libm vs torch's
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-14)
    assert res[1][2].lower() == res[0][2].lower()  # (torch spells Log1PBackward0)


OTHERS = {
    "int64": lambda: ember.arange(3).exp(),
    "float16": lambda: ember.ones(3, dtype=ember.float16).exp(),
    "complex": lambda: ember.ones(3, dtype=ember.complex64).exp(),
    "large": lambda: ember.ones(ckernels.MIN_SIZE).tanh(),
    "parameter": lambda: ember.nn.Parameter(ember.ones(3)).exp(),
    "bool neg": lambda: -ember.ones(3, dtype=ember.bool),
}


@pytest.mark.parametrize("name", OTHERS)
def test_other_operands_take_apply(name, monkeypatch):
    calls = []
    real = dispatch.apply

    def counting(op, args, params):
        calls.append(op.name)
        return real(op, args, params)
    monkeypatch.setattr(dispatch, "apply", counting)
    try:
        OTHERS[name]()
    except RuntimeError:
        pass  # torch's error for -bool, raised by the kernel apply runs
    monkeypatch.undo()
    assert calls


def test_under_a_mode_the_mode_sees_it():
    seen = []

    class Spy(dispatch.DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            seen.append(op.name)
            return op(*args, **kwargs)
    x = ember.ones(2, requires_grad=True)
    with Spy():
        y = (-x).exp()
    assert seen == ["neg", "exp"] and y.grad_fn is not None
