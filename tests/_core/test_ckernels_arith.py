"""Binary arithmetic, lerp/where and sums in C over threads (ember._core.ckernels.binary /
.ternary / .reduce): every
value bitwise NumPy's, on 1, 2 and 3 threads, for every operand form the kernels take; the
forms they decline left to NumPy; and the public ops that use them against torch."""
import os

import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels as ck
from ember._core.ckernels import binary as ckbin
from ember._core.ckernels import reduce as ckred
from ember._core.ckernels import ternary as cktern
from ember._core import scalar_functions as sf

needs_c = pytest.mark.skipif(not ck.status()["available"] and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ck.status()['reason']}")
N = ck.PARALLEL_SIZE + 4099  # a partial last block
NP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
      "maximum": np.maximum, "minimum": np.minimum}
_INT = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10
    flat = x.reshape(-1)
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e-310, 3e38, -3e38, 1.0]
    flat[rng.integers(0, flat.size, 64)] = np.resize(special, 64)
    return x.astype(dtype)


def _bits(a):
    a = np.asarray(a)
    return a.view(_INT[a.dtype])


def _same(r, ref):
    """Bitwise equal arrays of one dtype and shape (NaNs too: x86 keeps the payload of an
    operand in vector and scalar code alike)."""
    assert r.dtype == ref.dtype and r.shape == ref.shape
    np.testing.assert_array_equal(_bits(r), _bits(ref))


def _declined(xp, *operands, **params):
    return None


@pytest.fixture
def two_threads():
    """ember.set_num_threads(2) for the test, restored after it."""
    prior = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(prior)


@pytest.fixture
def threads(monkeypatch):
    """Runs a thunk with the kernels on ``n`` threads."""
    def run(n, thunk):
        monkeypatch.setattr(ck, "_threads", lambda size: n)
        return thunk()
    return run


def _operand_forms(dtype):
    a, b = _values(N, dtype, 0), _values(N, dtype, 1)
    m = np.float64 if dtype == np.float64 else np.float32
    rows, cols = 1031, 257
    big, row = _values((rows, cols), dtype, 2), _values((cols,), dtype, 3)
    return [(a, b), (a, 2.5), (-3, b), (a, 1e30), (a, np.array(m(0.7))),
            (np.array([[m(-1.25)]]), b.reshape(1, -1)), (big, row), (row[None], big),
            (big.reshape(1, rows, cols), row), (a, -0.0)]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ckbin.BINARY)
def test_binary_kernels_are_numpy_bitwise_on_any_thread_count(threads, name, dtype):
    k = ckbin.wrap(name, _declined)
    for x, y in _operand_forms(dtype):
        ref = NP[name](x, y)
        for n in (2, 3):
            r = threads(n, lambda: k(np, x, y))
            assert r is not None, (np.shape(x), np.shape(y))  # the C kernel ran
            _same(r, ref)


@needs_c
def test_binary_kernels_decline_what_they_do_not_compute(threads):
    k = ckbin.wrap("add", _declined)
    a = _values((1024, 512), np.float32, 0)
    declined = [(a, a.astype(np.float64)),              # mixed dtypes
                (a[:, ::2], a[:, 1::2]),                # not contiguous
                (a.astype(np.int32), a.astype(np.int32)),
                (a, a[:, :32].copy()),                  # does not broadcast as a trailing row
                (a, np.ones((1024, 1), np.float32)),    # a column, not a row
                (np.ones((16384, 32), np.float32), np.ones(32, np.float32)),  # too short a row
                (a[:8], a[:8]),                         # small
                (a, 2 ** 60), (a, 1e39), (a, complex(1, 2))]
    for x, y in declined:
        assert threads(2, lambda: k(np, x, y)) is None, (np.shape(x), np.shape(y))
    # one thread (or a forked child): NumPy's loop, as fast on one core
    assert threads(1, lambda: k(np, a, a)) is None


@needs_c
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_public_arithmetic_on_two_threads_matches_torch(two_threads, dtype):
    rng = np.random.default_rng(0)
    an = rng.standard_normal((1024, 513))
    bn, cn = rng.standard_normal((1024, 513)), rng.standard_normal(513)
    edt = getattr(ember, str(dtype).split(".")[1])
    out = {}
    for lib, dt in ((torch, dtype), (ember, edt)):
        a, b, c = (lib.tensor(v, dtype=dt) for v in (an, bn, cn))
        r = [a + b, a - b, a * b, a / b, lib.maximum(a, b), lib.minimum(a, c),
             a * 0.5, 2 - a, a / c, lib.add(a, b, alpha=2), c - a]
        d = a.clone()
        d.add_(b).mul_(c).div_(2.0).sub_(b, alpha=2)
        o = lib.empty_like(a)
        lib.mul(a, b, out=o)
        out[lib.__name__] = [t.numpy() for t in r + [d, o]]
    for e, t in zip(out["ember"], out["torch"], strict=True):
        np.testing.assert_array_equal(e, t)  # exactly rounded operations: equal
    # the gradient of a broadcast bias is a sum over the leading dim (the C column sum)
    grads = {}
    for lib, dt in ((torch, dtype), (ember, edt)):
        a = lib.tensor(an, dtype=dt, requires_grad=True)
        c = lib.tensor(cn, dtype=dt, requires_grad=True)
        ((a * c + c) * lib.tensor(bn, dtype=dt)).sum().backward()
        grads[lib.__name__] = (a.grad.numpy(), c.grad.numpy())
    for e, t in zip(grads["ember"], grads["torch"]):
        np.testing.assert_allclose(e, t, rtol=2e-5 if dtype == torch.float32 else 1e-12,
                                   atol=1e-4 if dtype == torch.float32 else 1e-10)


SUMS = [((1024, 512), (1,)), ((1024, 512), (0,)), ((1024, 512), (0, 1)), ((37, 1001), (1,)),
        ((4096,), (0,)), ((3, 700, 9), (1,)), ((3, 700, 9), (1, 2)), ((3, 700, 9), (0, 1)),
        (((1 << 20) + 13,), (0,)), ((100003, 3), (0,)), ((5, 4, 3000), (2,)), ((7, 3001), (0, 1)),
        ((2, 9000), (1,)), ((9, 1000), (1,)), ((2, 3, 4, 1000), (1, 2))]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_are_numpy_bitwise_on_any_thread_count(threads, dtype):
    for shape, dims in SUMS:
        x = (np.random.default_rng(len(shape)).standard_normal(shape) * 10 + 3).astype(dtype)
        for keepdim in (False, True):
            ref = np.sum(x, axis=dims, keepdims=keepdim)
            mref = np.mean(x, axis=dims, keepdims=keepdim)
            for n in (1, 2, 3):
                r = threads(n, lambda: ckred.sum_(x, dims, keepdim))
                assert r is not None, (shape, dims)
                _same(r, np.asarray(ref))
                _same(threads(n, lambda: ckred.mean(x, dims, keepdim)), np.asarray(mref))
    # special values: a NaN anywhere, infinities of both signs, negative zeros only
    x = np.full((64, 512), -0.0, dtype)
    _same(ckred.sum_(x, (1,), False), np.sum(x, 1))
    _same(ckred.sum_(x, (0,), False), np.sum(x, 0))
    x[3, 7], x[5, 9], x[5, 10], x[9, 0] = np.nan, np.inf, -np.inf, np.inf
    for dims in ((0,), (1,), (0, 1)):
        _same(ckred.sum_(x, dims, False), np.asarray(np.sum(x, dims)))


@needs_c
def test_sums_decline_what_they_do_not_compute():
    x = np.ones((64, 64, 8), np.float32)
    assert ckred.sum_(x, (0, 2), False) is None         # dims not one consecutive group
    assert ckred.sum_(x[:, ::2], (1,), False) is None   # not contiguous
    assert ckred.sum_(x.astype(np.int64), (1,), False) is None
    assert ckred.sum_(x[:2], (1,), False) is None       # small


@needs_c
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_public_sum_and_mean_match_torch_and_numpy(two_threads, dtype):
    xn = np.random.default_rng(0).standard_normal((300, 40, 50))
    edt = getattr(ember, str(dtype).split(".")[1])
    for dim in (None, 0, 1, 2, (0, 1), (1, 2), -1):
        for keepdim in (False, True):
            for op in ("sum", "mean"):
                kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
                e = getattr(ember.tensor(xn, dtype=edt), op)(**kw)
                t = getattr(torch.tensor(xn, dtype=dtype), op)(**kw)
                assert e.shape == t.shape and e.dtype == edt
                # float32 columns of 12000 are summed one by one (NumPy's order):
                # within a millionth of the sum of magnitudes of torch's values
                scale = np.abs(getattr(torch.tensor(xn).abs(), op)(**kw).numpy())
                tol = 1e-6 if dtype == torch.float32 else 1e-14
                assert np.all(np.abs(e.numpy() - t.numpy()) <= tol * scale)
                npx = xn.astype(e.numpy().dtype)
                axis = None if dim is None else dim
                ref = getattr(np, op)(npx, axis=axis, keepdims=keepdim and dim is not None)
                _same(e.numpy(), np.asarray(ref))


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_amax_amin_rows_and_columns_are_numpy_on_any_thread_count(threads, dtype):
    rng = np.random.default_rng(0)
    for shape, dims in SUMS:
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        P, _, C = ckred._plan(x, dims)
        if P == C == 1:  # all elements: left to NumPy's own loop (checked below)
            continue
        if x.size > 20000:  # NaNs (they win) and infinities in some slices
            flat = x.reshape(-1)
            flat[rng.integers(0, x.size, 5)] = np.nan
            flat[rng.integers(0, x.size, 5)] = np.inf
            flat[rng.integers(0, x.size, 5)] = -np.inf
        for largest, f in ((True, np.max), (False, np.min)):
            for keepdim in (False, True):
                ref = f(x, axis=dims, keepdims=keepdim)
                for n in (1, 2, 3):
                    r = threads(n, lambda: ckred.extreme(x, dims, keepdim, largest))
                    assert r is not None, (shape, dims)
                    _same(r, ref)
    x = np.ones((64, 512), dtype)
    assert ckred.extreme(x, (0, 1), False, True) is None  # all elements: NumPy's own loop


@needs_c
def test_public_amax_amin_match_torch():
    xn = np.random.default_rng(0).standard_normal((300, 40, 50)).astype(np.float32)
    xn[7, 3, 9] = np.nan
    for dim in (0, 1, 2, (0, 1), (1, 2), -1):
        for op in ("amax", "amin"):
            e = getattr(ember.tensor(xn), op)(dim)
            t = getattr(torch.tensor(xn), op)(dim)
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    x = ember.tensor(np.zeros((300, 40, 1), np.float32) + np.arange(49, dtype=np.float32),
                     requires_grad=True)
    x.amax(2).sum().backward()  # the gradient goes to each row's maximum (column 48)
    assert float(x.grad[..., 48].sum()) == 300 * 40 and float(x.grad.sum()) == 300 * 40


def _ternary_forms(dtype):
    rng = np.random.default_rng(5)
    shape = (700, 613)  # below PARALLEL_SIZE at 1 thread, above it with 2 or 3
    a, b = _values(shape, dtype, 6), _values(shape, dtype, 7)
    w = rng.uniform(-1, 2, shape).astype(dtype)
    w.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, 0.5, -0.5, 1.0]
    m = rng.random(shape) < 0.5
    one = np.array(0.7, dtype)
    return [("lerp", (a, b, w)), ("lerp", (a, b, 0.3)), ("lerp", (a, b, one)),
            ("lerp", (a, b, 1.7)), ("lerp", (a, 2.0, w)), ("where", (m, a, b)),
            ("where", (m, a, 0.0)), ("where", (m, -1.5, b)), ("where", (np.array(True), a, b)),
            ("where", (m, one, b))]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lerp_and_where_are_the_table_numpy_form_bitwise(threads, dtype):
    for name, ops in _ternary_forms(dtype):
        k = cktern.wrap(name, _declined)
        ref = sf.get(name).numpy(np, *[np.array(o, dtype) if isinstance(o, float) else o
                                       for o in ops])
        for n in (1, 2, 3):
            r = threads(n, lambda: k(np, *ops))
            assert r is not None, (name, [np.shape(o) for o in ops])
            _same(r, np.asarray(ref, dtype))


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_addcmul_and_addcdiv_are_the_ops_numpy_kernels_bitwise(threads, dtype):
    from ember.ops import pointwise
    numpy_forms = {"addcmul": pointwise._addcmul_kernel, "addcdiv": pointwise._addcdiv_kernel}
    shape = (700, 613)
    x, t1, t2 = (_values(shape, dtype, s) for s in (8, 9, 10))
    for name, ref_fn in numpy_forms.items():
        k = cktern.wrap(name, _declined)
        for ops, value in [((x, t1, t2), 1), ((x, t1, t2), 0.37), ((x, t1, t2), -3),
                           ((x, 1.5, t2), 0.5), ((np.array(2.0, dtype), t1, t2), 1e-3)]:
            ref = ref_fn(np, *[np.array(o, dtype) if isinstance(o, float) else o
                               for o in ops], value=value)
            for n in (1, 2, 3):
                r = threads(n, lambda: k(np, *ops, value=value))
                assert r is not None, (name, value)
                _same(r, np.asarray(ref, dtype))
        assert k(np, x, t1, t2, value=True) is None  # a bool value: the NumPy kernel's rules


@needs_c
def test_lerp_and_where_decline_what_they_do_not_compute():
    a = np.ones((64, 128), np.float32)
    m = a > 0
    for name, ops in [("lerp", (a, a.astype(np.float64), a)),   # mixed dtypes
                      ("lerp", (a, a[:, :1], a)),                # broadcast
                      ("lerp", (a[:, ::2], a[:, ::2], 0.5)),     # not contiguous
                      ("lerp", (a[:4], a[:4], 0.5)),              # small
                      ("where", (m.astype(np.uint8), a, a)),     # not a bool condition
                      ("where", (m, a, 1e39)),                    # out of float32's range
                      ("where", (m, 1.0, 2.0)),                   # no float operand
                      ("lerp", (a.astype(np.int32), a.astype(np.int32), 1))]:
        assert cktern.wrap(name, _declined)(np, *ops) is None, (name, [np.shape(o) for o in ops])


@needs_c
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_public_lerp_and_where_match_torch(two_threads, dtype):
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((700, 613)), rng.standard_normal((700, 613))
    wn = rng.uniform(-1, 2, (700, 613))
    edt = getattr(ember, str(dtype).split(".")[1])
    out = {}
    for lib, dt in ((torch, dtype), (ember, edt)):
        a, b, w = (lib.tensor(v, dtype=dt) for v in (an, bn, wn))
        m = a > b
        d = a.clone()
        d.lerp_(b, 0.25)
        out[lib.__name__] = [t.numpy() for t in (lib.where(m, a, b), lib.where(m, a, 0.0),
                                                  lib.lerp(a, b, w), lib.lerp(a, b, 0.3), d)]
    for k, (e, t) in enumerate(zip(out["ember"], out["torch"], strict=True)):
        if k < 2:
            np.testing.assert_array_equal(e, t)  # a selection: exact
        else:  # torch fuses the product and the sum (one rounding): within an ulp or two
            eps = np.finfo(e.dtype).eps
            np.testing.assert_allclose(e, t, rtol=4 * eps, atol=4 * eps)
