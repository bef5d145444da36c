"""In-place ops written straight into their target (ember._core.inplace._write_direct): the
values bitwise those of the out-of-place op (on one thread and on two, where the C loops
take the write), torch's values, dtypes, errors and version counters, autograd around the
writes, overlapping and strided targets, and the cases the direct forms must decline."""
import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels as ck
from ember._core import inplace
from ember._core.tensor import _version_of

N = ck.PARALLEL_SIZE + 4099  # the C loops' size, with a partial last block
_INT = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64,
        np.dtype(np.complex64): np.int64}


def _bits(a):
    a = np.asarray(a)
    if a.dtype.kind == "c":
        a = a.view(a.real.dtype)
    return a.view(_INT[a.dtype]) if a.dtype in _INT else a


def _ver(t):
    return t._version if isinstance(t, torch.Tensor) else _version_of(t)[0]


def _same(t, ref):
    """ember tensors ``t`` and ``ref``: equal dtype, shape and bits (NaNs too)."""
    assert t.dtype == ref.dtype and t.shape == ref.shape
    np.testing.assert_array_equal(_bits(t.numpy()), _bits(ref.numpy()))


@pytest.fixture
def spy(monkeypatch):
    """Counts the writes each direct form accepted."""
    table = inplace._INTO or inplace._into_table()
    hits = {}
    for name, f in list(table.items()):
        def counted(*a, _f=f, _n=name, **k):
            done = _f(*a, **k)
            hits[_n] = hits.get(_n, 0) + bool(done)
            return done
        monkeypatch.setitem(table, name, counted)
    return hits


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def nthreads(request, monkeypatch):
    """The C loops on ``n`` threads (at 1 the binary ops write with NumPy's ufuncs)."""
    monkeypatch.setattr(ck, "_threads", lambda size: request.param)
    return request.param


def _data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, 32)] = np.resize(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3e38, 1.0], 32)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(-50, 50, shape)
    return ember.from_numpy(np.ascontiguousarray(x.astype(dtype)))


_BIN = {"add": ember.add, "sub": ember.sub, "mul": ember.mul, "div": ember.div}


def _binary_cases(dtype):
    a = _data((N,), dtype, 0)
    m = _data((1031, 257), dtype, 1)
    cases = [(a, _data((N,), dtype, 2), {}), (m, _data((257,), dtype, 3), {}),
             (m, _data((1, 257), dtype, 4), {}), (m, _data((1031, 1), dtype, 5), {}),
             (a, _data((), dtype, 6), {})]
    if np.dtype(dtype).kind in "fc":
        cases += [(a, 2.5, {}), (a, -3, {}), (a, -0.0, {}), (a, 1e30, {}),
                  (a, _data((N,), dtype, 7), {"alpha": 0.3}), (m, _data((257,), dtype, 8),
                                                               {"alpha": -2}),
                  (a, 1.5, {"alpha": 0.1})]
    return cases


@pytest.mark.parametrize("name,dtype", [
    (n, d) for n in ("add", "sub", "mul", "div")
    for d in (np.float32, np.float64, np.complex64, np.int32)
    if n != "div" or d != np.int32])  # int true division: a float result, refused (below)
def test_binary_inplace_is_the_out_of_place_result_bitwise(spy, nthreads, name, dtype):
    for a, b, kw in _binary_cases(dtype):
        if kw and name in ("mul", "div"):
            continue
        ref = _BIN[name](a, b, **kw)
        t = a.clone()
        v = _ver(t)
        r = getattr(t, name + "_")(b, **kw)
        assert r is t and _ver(t) == v + 1
        _same(t, ref)
    assert spy[name] > 0


def test_binary_inplace_matches_torch_values_and_dtypes(spy):
    for dt in (torch.float32, torch.float64, torch.int64, torch.complex128):
        x = torch.randn(37, 45).mul(20).to(dt)
        y = torch.randn(45).mul(20).to(dt)
        for name in ("add", "sub", "mul", "div"):
            if name == "div" and not (dt.is_floating_point or dt.is_complex):
                continue
            for other, kw in ((y, {}), (y, {"alpha": 2}), (3, {}), (torch.tensor(2, dtype=dt),
                                                                   {})):
                if kw and name in ("mul", "div"):
                    continue
                if isinstance(other, int) and not (dt.is_floating_point or dt.is_complex):
                    other = torch.tensor(other, dtype=dt)
                tt = x.clone()
                getattr(tt, name + "_")(other, **kw)
                te = ember.from_numpy(x.numpy().copy())
                oe = ember.from_numpy(other.numpy()) if isinstance(other, torch.Tensor) \
                    else other
                getattr(te, name + "_")(oe, **kw)
                assert str(te.dtype) == str(tt.dtype).replace("torch", "ember")
                np.testing.assert_allclose(te.numpy(), tt.numpy(), rtol=1e-6, atol=0)
    assert spy["add"] > 0 and spy["div"] > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ternary_inplace_is_the_out_of_place_result_bitwise(spy, nthreads, dtype):
    a, b, c = (_data((N,), dtype, k) for k in range(3))
    w = _data((N,), dtype, 3)
    c = c.abs().add(0.5)
    for name, args, kw in (("lerp", (b, 0.3), {}), ("lerp", (b, w), {}),
                           ("lerp", (b, 1.25), {}), ("addcmul", (b, c), {}),
                           ("addcmul", (b, c), {"value": -0.7}), ("addcmul", (b, 2.0), {}),
                           ("addcdiv", (b, c), {"value": 0.1}), ("addcdiv", (b, c), {})):
        ref = getattr(ember, name)(a, *args, **kw)
        t = a.clone()
        v = _ver(t)
        assert getattr(t, name + "_")(*args, **kw) is t and _ver(t) == v + 1
        _same(t, ref)
    assert spy["lerp"] == 3 and spy["addcmul"] == 3 and spy["addcdiv"] == 2


def test_ternary_inplace_matches_torch():
    g = torch.Generator().manual_seed(0)
    x, y, z = (torch.randn(300, 70, generator=g) for _ in range(3))
    for name, args, kw in (("lerp", (y, 0.25), {}), ("lerp", (y, z), {}),
                           ("addcmul", (y, z), {"value": 0.5}),
                           ("addcdiv", (y, z.abs() + 1), {"value": -2})):
        tt = getattr(x.clone(), name + "_")(*args, **kw)
        te = getattr(ember.from_numpy(x.numpy().copy()), name + "_")(
            *(ember.from_numpy(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args),
            **kw)
        np.testing.assert_allclose(te.numpy(), tt.numpy(), rtol=1e-6, atol=1e-6)


def test_copy_fill_zero_write_in_place_as_torch(spy):
    cases = [(torch.float32, torch.randn(64, 65, dtype=torch.float64)),
             (torch.int32, torch.randn(64, 65) * 100), (torch.float64, torch.arange(65)),
             (torch.bool, torch.randn(64, 65)), (torch.float32, torch.randn(65)),
             (torch.int64, torch.tensor(7.9))]
    for dt, src in cases:
        tt = torch.empty(64, 65, dtype=dt).copy_(src)
        te = ember.empty(64, 65, dtype=getattr(ember, str(dt).split(".")[1]))
        v = _ver(te)
        te.copy_(ember.from_numpy(src.numpy()))
        assert _ver(te) == v + 1
        np.testing.assert_array_equal(te.numpy(), tt.numpy())
    for dt, value in ((torch.float32, 2.5), (torch.int16, 3), (torch.bool, True),
                      (torch.float64, torch.tensor(1.5)), (torch.complex64, 1 + 2j)):
        tt = torch.ones(5, 7, dtype=dt)[:, ::2].fill_(value)
        e = ember.ones(5, 7, dtype=getattr(ember, str(dt).split(".")[1]))[:, ::2]
        e.fill_(ember.tensor(value.item()) if isinstance(value, torch.Tensor) else value)
        np.testing.assert_array_equal(e.numpy(), tt.numpy())
    z = ember.randn(40, 30).t()
    z.zero_()
    assert not z.numpy().any() and spy["copy"] >= len(cases) + 6


def test_overlapping_operands(spy, nthreads):
    # an operand partially overlapping the target is refused, as torch's (the overlap
    # checks themselves: tests/_core/test_mem_overlap.py); the same memory is elementwise
    base = np.random.default_rng(0).standard_normal(N + 1).astype(np.float32)
    for lib in (torch, ember):
        a = lib.from_numpy(base.copy())
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                                               "written-to tensor refer to a single memory"):
            a[1:].add_(a[:-1])
        for name, kw in (("lerp", {}), ("addcmul", {"value": 0.5})):
            with pytest.raises(RuntimeError, match="refer to a single memory location"):
                getattr(a[1:], name + "_")(a[:-1], 0.25 if name == "lerp" else a[:-1], **kw)
        np.testing.assert_array_equal(a.numpy(), base)  # nothing was written
    s = ember.from_numpy(base[:N].copy())
    ref = s * s
    s.mul_(s)  # the same memory: elementwise, written directly
    _same(s, ref)
    m = ember.from_numpy(base[:1024 * 256].reshape(512, 512).copy())
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        m.add_(m.t())
    ref = m.flip(0) * 0.5
    m.copy_(m.flip(0)).mul_(0.5)  # flip is a copy for torch (here a view, never dense)
    _same(m, ref)


def test_strided_and_self_overlapping_targets():
    x = torch.randn(30, 40)
    e = ember.from_numpy(x.numpy().copy())
    x.t().mul_(3)[::2].add_(1)
    x[:, 1::3].sub_(torch.ones(13), alpha=2)
    e.t().mul_(3)[::2].add_(1)
    e[:, 1::3].sub_(ember.ones(13), alpha=2)
    np.testing.assert_array_equal(e.numpy(), x.numpy())
    # an expanded target (stride 0) is refused, as torch's
    for lib in (torch, ember):
        t = lib.arange(4.)
        with pytest.raises(RuntimeError, match="more than one element of the written-to "
                                               "tensor refers to a single memory location"):
            t.expand(3, 4).add_(1)
        np.testing.assert_array_equal(t.numpy(), [0.0, 1.0, 2.0, 3.0])
    assert not inplace._no_self_overlap(np.broadcast_to(np.ones(4), (3, 4)))
    assert inplace._no_self_overlap(np.ones((6, 8))[::2, 1::3].T)
    assert not inplace._no_self_overlap(np.lib.stride_tricks.as_strided(
        np.ones(10), (4, 4), (16, 8)))


def test_empty_targets():
    for shape in ((0,), (3, 0), (0, 5)):
        t = ember.zeros(shape)
        v = _ver(t)
        t.add_(ember.ones(shape[-1:])).mul_(2).lerp_(ember.ones(shape), 0.5).copy_(
            ember.ones(shape))
        assert t.shape == shape and _ver(t) == v + 4


def _error(lib, f):
    with pytest.raises(Exception) as e:
        f(lib)
    return e.type


@pytest.mark.parametrize("case", [
    lambda L: L.ones(3, dtype=L.int64).add_(1.5),
    lambda L: L.ones(3, dtype=L.int64).mul_(L.ones(3)),
    lambda L: L.ones(3, dtype=L.int32).div_(2),
    lambda L: L.ones(3).add_(L.ones(3), alpha=1j),
    lambda L: L.ones(3, dtype=L.int64).add_(L.ones(3, dtype=L.int64), alpha=0.5),
    lambda L: L.ones(3).sub_(L.ones(3, dtype=L.bool)),
    lambda L: L.ones(3, 1).add_(L.ones(3, 4)),
    lambda L: L.ones(3).add_(L.ones(4)),
    lambda L: L.ones(3).lerp_(L.ones(2, 3), 0.5),
    lambda L: L.ones(5000, dtype=L.int64).addcmul_(L.ones(5000), L.ones(5000)),
    lambda L: L.ones(3).add_(1, alpha=True),
    lambda L: L.ones(3, dtype=L.float32).add_(L.ones(3, dtype=L.complex64)),
    lambda L: L.ones(3, requires_grad=True).mul_(2),
    lambda L: L.ones(3, requires_grad=True)[:2].add_(1),
])
def test_errors_are_torchs(case):
    assert _error(ember, case) is _error(torch, case)


def test_mixed_dtypes_take_torchs_in_place_promotion():
    for lib_args in ((torch.float32, torch.float64), (torch.float64, torch.float32),
                     (torch.float32, torch.int64), (torch.complex64, torch.float64)):
        a = (torch.randn(50) * 1e3).to(lib_args[0])
        b = (torch.randn(50) * 1e3).to(lib_args[1])
        want = a.clone().add_(b, alpha=3).mul_(b).sub_(b)
        e = ember.from_numpy(a.numpy().copy())
        eb = ember.from_numpy(b.numpy())
        got = e.add_(eb, alpha=3).mul_(eb).sub_(eb)
        assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_version_counters_and_saved_tensors_as_torch():
    results = []
    for L in (torch, ember):
        x = L.ones(4, 5, requires_grad=True)
        y = x.exp()  # saves its output
        base = y.detach()
        view = base[1]
        v0 = _ver(base)
        with L.no_grad():
            view.mul_(2)
            base.add_(1)
            base.lerp_(L.zeros(4, 5), 0.5)
            view.copy_(L.ones(5))
        results.append(_ver(base) - v0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    assert results[0] == results[1] == 4


def test_autograd_through_in_place_writes_on_views():
    grads = []
    for L in (torch, ember):
        g = np.random.default_rng(3).standard_normal((6, 7)).astype(np.float32)
        x = L.tensor(g, requires_grad=True)
        w = L.tensor(g[0] + 1, requires_grad=True)
        y = x * 1.5
        v = y[:, 2:5]
        v.mul_(w[2:5]).add_(x[:, :3], alpha=2)
        y[0].lerp_(w, 0.3)
        y[1].addcmul_(w, w, value=0.5)
        with L.no_grad():
            y[5].add_(100)  # not recorded: the gradient flows around it
        (y * y).sum().backward()
        grads.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


def test_direct_forms_decline_what_they_do_not_compute(spy):
    # halves, bool, mixed dtypes, non-ndarray operands: none reaches a direct write
    ember.ones(10, dtype=ember.float16).add_(1.5)
    ember.ones(10, dtype=ember.bfloat16).mul_(ember.ones(10, dtype=ember.bfloat16))
    ember.ones(10, dtype=ember.bool).add_(True)
    ember.ones(10).add_(ember.ones(10, dtype=ember.float64))
    ember.ones(10, dtype=ember.int8).add_(300)
    ember.ones(100).lerp_(ember.ones(100), 0.5)  # below the C loops' size
    ember.ones(10000, dtype=ember.int64).mul_(3)
    assert not any(spy.values()), spy
    np.testing.assert_array_equal(ember.ones(5, dtype=ember.int8).add_(300).numpy(),
                                  torch.ones(5, dtype=torch.int8).add_(300).numpy())


def test_recorded_writes_copy_the_old_value_only_when_a_gradient_reads_it(monkeypatch):
    clones = []
    real = inplace._clone_op
    monkeypatch.setattr(inplace, "_clone_op", lambda: clones.append(1) or real())
    results = []
    for L in (torch, ember):
        g = np.random.default_rng(5).standard_normal((8, 9)).astype(np.float32)
        x = L.tensor(g, requires_grad=True)
        w = L.tensor(g[::-1].copy(), requires_grad=True)
        c = L.tensor(g * 0.5)
        y = x * 1.0
        y.mul_(3.0)       # d/dy reads nothing of y: no copy
        y.mul_(c)         # reads c only: no copy
        y.div_(c + 2)     # reads the divisor only
        y.mul_(w)         # w's gradient reads y's old value: copied
        y.addcmul_(c, w)  # saves every input (no per-gradient table): copied
        y.sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    assert len(clones) == 2
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clamp_inplace_is_clamp_and_torchs_bitwise(spy, dtype):
    a = _data((3000,), dtype, 11)
    ta = torch.from_numpy(a.numpy().copy())
    for lo, hi in ((-1.5, 2), (None, 0.1), (-3, None), (2.0, -2.0), (-0.0, 0.0),
                   (float("nan"), 1.0), (-1e30, 1e30)):
        ref = ember.clamp(a, lo, hi)
        t = a.clone()
        v = _ver(t)
        assert t.clamp_(lo, hi) is t and _ver(t) == v + 1
        _same(t, ref)
        want = ta.clone().clamp_(lo, hi).numpy()
        np.testing.assert_array_equal(_bits(t.numpy()), _bits(want))
    g = a.clone()[::3]
    g.clamp_min_(0.5)
    g.clamp_max_(1.0)
    np.testing.assert_array_equal(g.numpy(), ta[::3].clamp(0.5, 1.0).numpy())
    assert spy["clamp"] == 9
    ember.ones(10, dtype=ember.int32).clamp_(0, 1)  # declined: NumPy's clip of ints differs
    ember.ones(10).clamp_(ember.zeros(10), 1.0)  # declined: a tensor bound
    assert spy["clamp"] == 9


def test_rows_take_the_c_loop_on_one_thread_bitwise(monkeypatch):
    """A repeating operand (a bias row) runs the C loop at one thread too, out of place and
    in place, bitwise NumPy's; same-shape operands keep NumPy's loop there."""
    from ember._core.ckernels import binary as ckbin
    monkeypatch.setattr(ck, "_threads", lambda size: 1)
    ran = []
    real = ck._fn
    monkeypatch.setattr(ck, "_fn", lambda *a, **k: ran.append(a[0]) or real(*a, **k))
    for dt in (np.float32, np.float64):
        m = _data((300, 257), dt, 1)  # 77,100 elements: above ROW_SIZE
        assert m.numel() >= ckbin.ROW_SIZE
        for row in (_data((257,), dt, 2), _data((1, 257), dt, 3)):
            for name in ("add", "sub", "mul", "div"):
                want = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply",
                                    "div": "true_divide"}[name])
                _same(_BIN[name](m, row), ember.from_numpy(want(m.numpy(), row.numpy())))
                _same(_BIN[name](row, m), ember.from_numpy(want(row.numpy(), m.numpy())))
                t = m.clone()
                ran.clear()
                getattr(t, name + "_")(row)
                assert ran == [f"ck_bin_{name}_{ck._SUFFIX[np.dtype(dt)]}"]
                _same(t, ember.from_numpy(want(m.numpy(), row.numpy())))
    ran.clear()
    _same(ember.add(row, m), ember.from_numpy(np.add(row.numpy(), m.numpy())))
    assert len(ran) == 1
    ran.clear()
    ember.add(m, m)
    m.clone().add_(m)
    assert not ran

