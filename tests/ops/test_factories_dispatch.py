"""Factories are operators (issue 10): dispatch modes see every creation with its params,
shape rules run on symbolic sizes, and the eager results keep torch's values, dtypes and
devices."""
import numpy as np
import pytest
import torch

import ember
from ember import DispatchMode
from ember._core import meta
from ember.ops import REGISTRY


class Recording(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append((op.name, args, dict(kwargs)))
        return op(*args, **kwargs)


F32 = np.dtype(np.float32)


@pytest.mark.parametrize("call, name, params", [
    (lambda: ember.zeros(2, 3), "full", {"shape": (2, 3), "fill_value": 0, "dtype": F32}),
    (lambda: ember.ones(4, dtype=ember.int32), "full",
     {"shape": (4,), "fill_value": 1, "dtype": np.dtype(np.int32)}),
    (lambda: ember.full((2,), 3.5), "full", {"shape": (2,), "fill_value": 3.5, "dtype": F32}),
    (lambda: ember.empty(3, 1), "empty", {"shape": (3, 1), "dtype": F32}),
    (lambda: ember.arange(1, 7, 2), "arange",
     {"start": 1, "end": 7, "step": 2, "dtype": np.dtype(np.int64)}),
    (lambda: ember.linspace(0, 1, 5), "linspace",
     {"start": 0, "end": 1, "steps": 5, "dtype": F32}),
    (lambda: ember.logspace(0, 2, 3, base=2.0), "logspace",
     {"start": 0, "end": 2, "steps": 3, "base": 2.0, "dtype": F32}),
    (lambda: ember.eye(2, 3), "eye", {"n": 2, "m": 3, "dtype": F32}),
    (lambda: ember.tensor([[1, 2], [3, 4]]), "tensor",
     {"data": [[1, 2], [3, 4]], "dtype": np.dtype(np.int64)}),
    (lambda: ember.randn(2, 2), "normal", {"shape": (2, 2), "dtype": F32}),
    (lambda: ember.rand(3), "uniform", {"shape": (3,), "dtype": F32}),
])
def test_mode_sees_each_factory_with_its_params(call, name, params):
    with Recording() as m:
        out = call()
    assert [c[0] for c in m.calls] == [name]
    _, args, seen = m.calls[0]
    assert args == ()
    for k, v in params.items():
        assert seen[k] == v, (k, seen[k], v)
    # the rule the mode could trace with agrees with what the kernel made
    rule = meta.run_rule(REGISTRY[name], (), seen)
    assert rule == ((tuple(out.shape), out.dtype),)


def test_values_under_a_mode_equal_torch():
    with Recording():
        got = [ember.zeros(2, 3), ember.ones(2, dtype=ember.int8), ember.full((3,), -1,
               dtype=ember.uint8), ember.arange(0, 1, 0.25), ember.arange(10, 0, -3),
               ember.linspace(-1, 1, 7, dtype=ember.int64), ember.logspace(0, 3, 4),
               ember.eye(3), ember.tensor([1.5, 2]), ember.zeros_like(ember.ones(2, 2))]
    want = [torch.zeros(2, 3), torch.ones(2, dtype=torch.int8), torch.full((3,), -1,
            dtype=torch.uint8), torch.arange(0, 1, 0.25), torch.arange(10, 0, -3),
            torch.linspace(-1, 1, 7, dtype=torch.int64), torch.logspace(0, 3, 4),
            torch.eye(3), torch.tensor([1.5, 2]), torch.zeros_like(torch.ones(2, 2))]
    for g, w in zip(got, want):
        assert str(g.dtype).split(".")[1] == str(w.dtype).split(".")[1]
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)


def test_like_factories_pass_the_input_shape_and_dtype():
    x = ember.ones(2, 5, dtype=ember.float64)
    with Recording() as m:
        ember.zeros_like(x)
        ember.full_like(x, 7)
        ember.empty_like(x, dtype=ember.int16)
    assert [(c[0], c[2]["shape"], c[2]["dtype"]) for c in m.calls] == [
        ("full", (2, 5), np.dtype(np.float64)), ("full", (2, 5), np.dtype(np.float64)),
        ("empty", (2, 5), np.dtype(np.int16))]
    assert m.calls[1][2]["fill_value"] == 7


def test_a_mode_can_replace_a_factory_result():
    class Sevens(DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            if op.name == "full":
                kwargs = dict(kwargs, fill_value=7)
            return op(*args, **kwargs)
    with Sevens():
        z = ember.zeros(2)
    np.testing.assert_array_equal(z.numpy(), [7.0, 7.0])


def test_requires_grad_default_dtype_and_out():
    x = ember.zeros(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        with Recording() as m:
            y = ember.ones(2)
        assert y.dtype == ember.float64 and m.calls[0][2]["dtype"] == np.dtype(np.float64)
        assert ember.arange(0.0, 1.0, 0.5).dtype == ember.float64
    finally:
        ember.set_default_dtype(prev)
    out = ember.empty(0, dtype=ember.int32)
    r = ember.zeros(2, 2, out=out)
    assert r is out and out.dtype == ember.int32 and out.shape == (2, 2)
    out2 = ember.empty(3)
    ember.arange(3, out=out2)
    np.testing.assert_array_equal(out2.numpy(), [0.0, 1.0, 2.0])


def test_device_param_and_default_device():
    from ember._core import device as dev

    class OtherArray(np.ndarray):
        pass

    dev.register_backend("other", np, OtherArray, to_host=lambda a: a.view(np.ndarray),
                         from_host=lambda a: np.asarray(a).view(OtherArray))
    try:
        with Recording() as m:
            a = ember.zeros(2, device="other")
        assert m.calls[0][2]["device"] == ember.device("other")
        assert a.device.type == "other" and type(a._data) is OtherArray
        ember.set_default_device("other")
        try:
            b = ember.arange(3)
            c = ember.zeros_like(ember.ones(2, device="cpu"))  # *_like: the input's device
        finally:
            ember.set_default_device(None)
        assert b.device.type == "other" and c.device.type == "cpu"
        np.testing.assert_array_equal(b.to("cpu").numpy(), [0, 1, 2])
    finally:
        dev._BACKENDS.pop("other")
        dev._BY_TYPE.clear()


class Sym:
    """A symbolic size: supports the arithmetic shape rules may use, nothing else."""

    def __init__(self, name):
        self.name = name

    def __add__(self, o):
        return Sym(f"({self.name}+{o})")

    def __sub__(self, o):
        return Sym(f"({self.name}-{o})")

    def __floordiv__(self, o):
        return Sym(f"({self.name}//{o})")

    def __eq__(self, o):
        return isinstance(o, Sym) and o.name == self.name

    __hash__ = object.__hash__

    def __repr__(self):
        return self.name


def test_shape_rules_take_symbolic_sizes():
    s = Sym("s0")
    f32 = np.dtype(np.float32)
    assert REGISTRY["full"].shape(shape=(s, 4), fill_value=0, dtype=f32) == ((s, 4), ember.float32)
    assert REGISTRY["empty"].shape(shape=(2, s), dtype=f32) == ((2, s), ember.float32)
    assert REGISTRY["eye"].shape(n=s, m=None, dtype=f32) == ((s, s), ember.float32)
    assert REGISTRY["linspace"].shape(start=0, end=1, steps=s, dtype=f32) == ((s,),
                                                                             ember.float32)
    i64 = np.dtype(np.int64)
    (n,), dt = REGISTRY["arange"].shape(start=0, end=s, step=2, dtype=i64)
    assert isinstance(n, Sym) and dt == ember.int64
    for start, end, step in ((0, 7, 2), (0, 8, 2), (3, 3, 1), (10, 0, -3), (-5, 6, 4)):
        assert REGISTRY["arange"].shape(start=start, end=end, step=step, dtype=i64)[0] == \
            (len(range(start, end, step)),)
    # the integer formula is exact where the float quotient would round
    big = (1 << 60) + 1
    assert REGISTRY["arange"].shape(start=0, end=big, step=3, dtype=np.dtype(np.int64))[0] == \
        (-(-big // 3),)


def test_factories_are_not_differentiable_ops_and_check_their_shapes():
    for name in ("full", "empty", "empty_strided", "arange", "range", "linspace", "logspace",
                 "eye", "tensor"):
        op = REGISTRY[name]
        assert not op.differentiable and op.shape is not None
    was = meta.check_shapes(True)
    try:
        ember.empty_strided((2, 3), (1, 2))
        ember.range(0, 1, 0.25)
        ember.scalar_tensor(3, dtype=ember.int64)
        ember.tensor([[1.0], [2.0]])
        ember.arange(5, 0, -2)
    finally:
        meta.check_shapes(was)


def test_out_of_linspace_logspace_and_eye():
    for fe, ft in ((lambda lib, o: lib.linspace(0, 1, 5, out=o), None),
                   (lambda lib, o: lib.logspace(0, 2, 3, out=o), None),
                   (lambda lib, o: lib.eye(2, 3, out=o), None)):
        oe, ot = ember.empty(0, dtype=ember.float64), torch.empty(0, dtype=torch.float64)
        re, rt = fe(ember, oe), fe(torch, ot)
        assert re is oe and oe.dtype == ember.float64 and tuple(oe.shape) == tuple(ot.shape)
        np.testing.assert_allclose(oe.numpy(), ot.numpy(), rtol=1e-12)
