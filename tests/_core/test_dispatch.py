"""The dispatcher: modes see every operator call; __ember_function__ overrides."""
import numpy as np
import pytest

import ember
from ember import DispatchMode


class CountingMode(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append(op.name)
        return op(*args, **kwargs)


def test_mode_sees_every_operator_call_including_backward():
    x = ember.ones(3, requires_grad=True)
    with CountingMode() as m:
        y = (x * 2).exp().sum()
        y.backward()
    assert m.calls[:3] == ["mul", "exp", "sum"]
    # the backward pass runs through the dispatcher too (vjps are ember ops)
    assert len(m.calls) > 3 and "mul" in m.calls[3:]
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2.0) * np.ones(3), rtol=1e-6)


def test_mode_sees_inplace_and_can_replace_results():
    class Doubling(DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            out = op(*args, **kwargs)
            if op.name == "add":
                with ember.no_grad():
                    return out * 2  # runs below this mode: not intercepted again
            return out
    a = ember.ones(2)
    with Doubling():
        r = a + a
    np.testing.assert_array_equal(r.numpy(), [4.0, 4.0])
    with CountingMode() as m:
        a.add_(1)
    assert m.calls == ["add_"]
    np.testing.assert_array_equal(a.numpy(), [2.0, 2.0])


def test_nested_modes_innermost_first_and_stack_restored():
    order = []

    class Tag(DispatchMode):
        def __init__(self, tag):
            self.tag = tag

        def __ember_dispatch__(self, op, args, kwargs):
            order.append(self.tag)
            return op(*args, **kwargs)
    x = ember.ones(2)  # a factory is an operator too: create it outside the modes
    with Tag("outer"), Tag("inner"):
        x.neg()
    assert order == ["inner", "outer"]
    from ember._core.state import STATE
    assert STATE.modes == [] and STATE.intercept is False


class Recorder:
    """A tensor-like that records the public functions called on it (like an fx Proxy)."""
    def __init__(self):
        self.log = []

    @classmethod
    def __ember_function__(cls, func, types, args=(), kwargs=None):
        rec = next(a for a in args if isinstance(a, Recorder))
        rec.log.append(func.__name__)
        return "recorded"


def test_ember_function_override_on_public_functions_methods_and_operators():
    r = Recorder()
    assert ember.exp(r) == "recorded"
    assert ember.add(ember.ones(2), r) == "recorded"
    assert ember.ones(2).mul(r) == "recorded"
    assert ember.where(ember.ones(2) > 0, r, 0.0) == "recorded"
    assert r.log == ["exp", "add", "mul", "where"]
    # operators defer to the other operand (Python then calls its reflected method)
    with pytest.raises(TypeError):
        ember.ones(2) + r


def test_tensor_subclass_with_override():
    class Logged(ember.Tensor):
        seen = []

        @classmethod
        def __ember_function__(cls, func, types, args=(), kwargs=None):
            cls.seen.append(func.__name__)
            return NotImplemented if False else "sub"
    t = ember.Tensor.__new__(Logged)
    t._data = np.ones(2, dtype=np.float32)
    assert ember.exp(t) == "sub"
    assert Logged.seen == ["exp"]
    from ember._core import dispatch
    dispatch.unregister_override_type(Logged)


def test_device_mismatch_and_unknown_device_errors():
    with pytest.raises(RuntimeError, match="Expected one of"):
        ember.device("tpu")
    assert ember.ones(2).device == ember.device("cpu")
    assert str(ember.ones(2).to("cpu").device) == "cpu"


def test_every_registered_op_declares_its_rules():
    """Registry self-test: each op has a kernel, and a derivative or is marked
    non-differentiable; a missing shape rule falls back to running the kernel."""
    from ember.ops import REGISTRY
    missing_vjp = [n for n, op in REGISTRY.items() if op.differentiable and op.vjp is None]
    assert all(callable(op.kernel) for op in REGISTRY.values())
    assert missing_vjp == [], f"differentiable ops without vjp: {missing_vjp}"


def test_mixing_devices_raises_torch_error_and_memmaps_are_cpu(tmp_path):
    from ember._core import device as dev

    class OtherArray(np.ndarray):
        """Arrays of a second, third-party device (registered like a PrivateUse1 backend)."""

    dev.register_backend("other", np, OtherArray, to_host=lambda a: a.view(np.ndarray),
                         from_host=lambda a: np.asarray(a).view(OtherArray))
    try:
        a = ember.ones(3)
        b = ember.ones(3).to("other")
        assert b.device == ember.device("other") and b.device.type == "other"
        np.testing.assert_array_equal((b * 2).to("cpu").numpy(), [2.0, 2.0, 2.0])
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, "
                                               "but found at least two devices, cpu and other!"):
            a + b
        m = np.lib.format.open_memmap(str(tmp_path / "m.npy"), mode="w+", dtype=np.float32,
                                      shape=(3,))
        t = ember.from_numpy(m)
        assert t.device == ember.device("cpu")
        np.testing.assert_array_equal((t + a).numpy(), [1.0, 1.0, 1.0])
    finally:
        dev._BACKENDS.pop("other")
        dev._BY_TYPE.clear()
