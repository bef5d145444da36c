"""``__torch_function__`` (torch's name for the override protocol) is honoured like
``__ember_function__``, with torch's default implementation and disabling guards."""
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _logged(lib):
    class Logged(lib.Tensor):
        calls = []

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            cls.calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs)
    return Logged


@LIBS
def test_subclass_torch_function_sees_calls_and_results_keep_the_subclass(lib):
    Logged = _logged(lib)
    x = lib.ones(3).as_subclass(Logged)
    y = lib.add(x, 1)
    assert type(y) is Logged and y.tolist() == [2.0, 2.0, 2.0]
    z = (x * 2).sum()
    assert type(z) is Logged and z.item() == 6.0
    for name in ("add", "sum"):
        assert name in Logged.calls
    a, b = lib.split(x, 2)  # sequences of results are converted element by element
    assert type(a) is Logged and type(b) is Logged and b.tolist() == [1.0]
    assert type(lib.ones(2) + 1) is lib.Tensor  # plain tensors are untouched


@LIBS
def test_disable_torch_function_subclass_runs_the_plain_implementation(lib):
    Logged = _logged(lib)
    x = lib.ones(2).as_subclass(Logged)
    with lib.DisableTorchFunctionSubclass():
        y = lib.mul(x, 3)
    assert Logged.calls == [] and type(y) is lib.Tensor and y.tolist() == [3.0, 3.0]
    lib.mul(x, 3)
    assert Logged.calls == ["mul"]  # honoured again after the block


@LIBS
def test_torch_function_can_replace_the_result(lib):
    class Const(lib.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is lib.sin:
                return "replaced"
            return super().__torch_function__(func, types, args, kwargs)
    x = lib.zeros(2).as_subclass(Const)
    assert lib.sin(x) == "replaced"
    assert type(lib.cos(x)) is Const and lib.cos(x).tolist() == [1.0, 1.0]


@LIBS
def test_default_returns_notimplemented_for_unrelated_types(lib):
    class A(lib.Tensor):
        pass

    class B(lib.Tensor):
        pass
    r = lib.Tensor.__torch_function__.__func__(A, lib.add, (B,), (lib.ones(1), 1))
    assert r is NotImplemented
