"""torch's sym_* helpers, SymInt/SymFloat/SymBool and is_distributed, against torch: values
and errors on plain numbers, and symbolic sizes under ember.compile(dynamic=True) and
ember.export."""
import math

import numpy as np
import pytest

import torch
import ember  # noqa: E402
from ember._dynamo.testing import CompileCounter  # noqa: E402


def _same(name, *args, **kwargs):
    """ember.<name> and torch.<name> give the same value and type, or the same error."""
    try:
        want = getattr(torch, name)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 -- the error itself is what is compared
        with pytest.raises(type(e)) as got:
            getattr(ember, name)(*args, **kwargs)
        assert str(got.value) == str(e)
        return
    got = getattr(ember, name)(*args, **kwargs)
    assert type(got) is type(want) and got == want, (name, args, kwargs, got, want)


@pytest.mark.parametrize("name,args", [
    ("sym_max", (3, 5)), ("sym_max", (5, 3)), ("sym_max", (1, 2.0)), ("sym_max", (2.5, 1)),
    ("sym_max", (True, 2)), ("sym_max", (np.int64(4), 2)), ("sym_max", ("a", 1)),
    ("sym_max", (1, None)), ("sym_min", (3, 5)), ("sym_min", (3, 5.0)),
    ("sym_min", (np.float32(0.5), 2)), ("sym_min", (1, "b")),
    ("sym_not", (True,)), ("sym_not", (False,)), ("sym_not", (0,)), ("sym_not", (3,)),
    ("sym_int", (-2.7,)), ("sym_int", (2.7,)), ("sym_int", (7,)), ("sym_int", ("x",)),
    ("sym_float", (3,)), ("sym_float", (2.5,)), ("sym_float", ("1.5",)),
    ("sym_sqrt", (4,)), ("sym_sqrt", (2.0,)), ("sym_sqrt", (-1,)),
    ("sym_ite", (True, 2, 3)), ("sym_ite", (False, 2, 3)), ("sym_ite", (False, 2.0, 3.5)),
    ("sym_ite", (1, 2, 3)), ("sym_ite", (True, 2, 3.0)),
    ("sym_sum", ([1, 2, 3],)), ("sym_sum", (1, 2, 3)), ("sym_sum", ([1, 2.5],)),
    ("sym_sum", ((),)), ("sym_fresh_size", (7,)),
])
def test_plain_numbers_match_torch(name, args):
    _same(name, *args)


@pytest.mark.parametrize("name", ["sym_constrain_range", "sym_constrain_range_for_size"])
@pytest.mark.parametrize("value", [5, 5.7, True, -1, 0, 3])
@pytest.mark.parametrize("kw", [{}, dict(min=2, max=4), dict(min=6), dict(max=4),
                                dict(min=8, max=2), dict(min=8, max=3), dict(min=0, max=10),
                                dict(min=-5, max=10), dict(min=3, max=3), dict(max=1)])
def test_constrain_range_matches_torch(name, value, kw):
    _same(name, value, **kw)


def test_constrain_range_takes_bounds_by_keyword_only():
    with pytest.raises(TypeError):
        ember.sym_constrain_range(5, 2, 4)
    with pytest.raises(TypeError):
        torch.sym_constrain_range(5, 2, 4)


def test_sym_math_is_math():
    assert ember.sym_sqrt(2) == math.sqrt(2)
    assert ember._sym.__dict__["_sym_cos"](1.0) == math.cos(1.0)


def test_is_distributed():
    t = ember.ones(2)
    assert ember.is_distributed(t) is torch.is_distributed(torch.ones(2)) is False
    assert t.is_distributed() is False
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.is_distributed(3)


def test_sym_classes_for_isinstance():
    # plain numbers are not symbolic, in torch and ember alike
    for T in (torch, ember):
        assert not isinstance(3, T.SymInt)
        assert not isinstance(3.0, T.SymFloat)
        assert not isinstance(True, T.SymBool)
    with pytest.raises(TypeError, match="made by ember.compile"):
        ember.SymInt(3)   # torch's wraps a tracer node; ember has no such nodes to wrap
    seen = []

    def f(x):
        seen.append(isinstance(x.shape[0], ember.SymInt))
        return x * 2

    ember.compile(f, dynamic=True)(ember.ones(4))
    assert seen == [True]          # a size under compile is symbolic, as torch's is
    f(ember.ones(4))
    assert seen == [True, False]   # eager sizes are ints


def _model(T):
    def f(x, y):
        n = T.sym_max(x.shape[0], y.shape[0])
        m = T.sym_min(x.shape[0], y.shape[0])
        s = T.sym_sum([x.shape[0], y.shape[0], 1])
        big = T.sym_ite(T.sym_not(x.shape[0] < y.shape[0]), x.shape[0], y.shape[0])
        T.sym_constrain_range_for_size(s, min=0, max=1000)
        return x.new_zeros(n) + m + s + big, T.sym_int(s)
    return f


# sym_max/sym_min are max(s0, s1) nodes (one graph for every ordering, see
# tests/_dynamo/test_sym_max_min.py); sym_ite picks an operand on the values (ember has no
# symbolic bools), so this model gets one graph per ordering where torch's serves all in one
@pytest.mark.parametrize("sizes,graphs", [([(3, 5), (7, 9), (2, 11)], 1),
                                          ([(3, 5), (7, 2), (4, 6), (9, 8)], 2)])
def test_symbolic_sizes_under_compile_match_eager(sizes, graphs):
    cnt = CompileCounter()
    ef = ember.compile(_model(ember), backend=cnt, dynamic=True)
    tf = _model(torch)
    for a, b in sizes:
        got, gs = ef(ember.ones(a), ember.ones(b))
        want, ws = tf(torch.ones(a), torch.ones(b))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert type(gs) is int and gs == ws
    assert cnt.frame_count == graphs


def test_symbolic_sum_stays_symbolic():
    got = []

    def f(x):
        s = ember.sym_sum(x.shape[0], x.shape[1], 2)
        got.append(isinstance(s, ember.SymInt))
        return x.reshape(s - 3) * 2

    cnt = CompileCounter()
    cf = ember.compile(f, backend=cnt, dynamic=True)
    for n in (2, 5):
        out = cf(ember.arange(float(n)).reshape(n, 1))
        np.testing.assert_array_equal(out.numpy(), np.arange(n) * 2.0)
    assert got == [True, True] and cnt.frame_count == 1


def test_constrain_range_on_a_read_value_narrows_its_export_range():
    eps = {}
    for T in (torch, ember):
        class M(T.nn.Module):
            def forward(self, x, n):
                k = n.item()
                T.sym_constrain_range(k, min=0, max=10)
                return x + k

        ep = eps[T.__name__] = T.export.export(M(), (T.ones(3), T.tensor(4)))
        out = ep.module()(T.ones(3), T.tensor(7))
        np.testing.assert_array_equal(np.asarray(out.tolist()), [8.0] * 3)
        with pytest.raises(RuntimeError, match="u0 <= 10"):
            ep.module()(T.ones(3), T.tensor(11))
    assert {str(k): str(v) for k, v in eps["torch"].range_constraints.items()} == \
        {str(k): str(v) for k, v in eps["ember"].range_constraints.items()}


@pytest.mark.parametrize("how", ["sym_constrain_range_for_size", "_constrain_as_size"])
def test_constrain_for_size_on_a_read_value_sizes_a_tensor_under_export(how):
    eps = {}
    for T in (torch, ember):
        class M(T.nn.Module):
            def forward(self, x, n):
                k = n.item()
                getattr(T, how)(k, min=3, max=10)
                return x.new_zeros(k) + x.sum()

        ep = eps[T.__name__] = T.export.export(M(), (T.ones(3), T.tensor(4)))
        out = ep.module()(T.ones(3), T.tensor(5))
        np.testing.assert_array_equal(np.asarray(out.tolist()), [3.0] * 5)
        with pytest.raises(RuntimeError, match="u0 >= 3"):
            ep.module()(T.ones(3), T.tensor(2))
    assert {str(k): str(v) for k, v in eps["torch"].range_constraints.items()} == \
        {str(k): str(v) for k, v in eps["ember"].range_constraints.items()}


@pytest.mark.parametrize("value,kw", [(5, {}), (-1, {}), (5, dict(min=6)), (5, dict(max=2))])
def test_constrain_as_size_matches_torch(value, kw):
    _same("_constrain_as_size", value, **kw)
