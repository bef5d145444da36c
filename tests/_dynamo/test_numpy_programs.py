"""ember.compile on NumPy programs (issue 18): results and dtypes equal plain NumPy's, NumPy
calls are captured into graphs (counted with a counting backend), unsupported calls break
the graph and run in real NumPy, side effects happen as in eager NumPy."""
import numpy as np
import pytest

import ember
from ember._dynamo.exc import Unsupported

from dyn_helpers import compiled


def check(fn, *args, graphs=1, rtol=1e-6, atol=1e-9, **kwargs):
    """``fn`` compiled on fresh copies of ``args`` equals ``fn`` in NumPy (values, dtypes,
    array vs NumPy scalar), with ``graphs`` graphs compiled; returns the compiled result."""
    cf, cnt = compiled(fn)
    got = cf(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    want = fn(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    tol = dict(rtol=rtol, atol=atol)
    assert_same(got, want, **tol)
    assert cnt.frame_count == graphs, cnt.frame_count
    return got


def assert_same(got, want, equal_nan=True, **tol):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, equal_nan, **tol)
        return
    assert type(got) is type(want), (type(got), type(want))
    if isinstance(want, (np.ndarray, np.generic)):
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, equal_nan=equal_nan,
                                   **(tol or dict(rtol=1e-6, atol=1e-9)))
    else:
        assert got == want


rng = np.random.default_rng(0)
X = rng.standard_normal((6, 4))
X32 = X.astype(np.float32)
I64 = rng.integers(-5, 6, (6, 4))
I32 = I64.astype(np.int32)


# ---- elementwise math, dtypes -------------------------------------------------------------
def test_elementwise_math_float64():
    def f(x):
        return np.sin(x) ** 2 + np.cos(x) ** 2 - np.exp(-x) * np.log1p(np.abs(x)) / 3
    check(f, X)


@pytest.mark.parametrize("x", [X32, I64, I32, X > 0], ids=["f32", "i64", "i32", "bool"])
def test_ufunc_dtypes_follow_numpy(x):
    def f(x):
        return np.sqrt(np.abs(x)), x * 2, x / 2, x + 1.5, x // 2 if x.dtype != bool else x, \
            np.maximum(x, 0), x > 0
    check(f, x)


@pytest.mark.parametrize("a, b", [(I64, X32), (I32, X32), (X32, X), (I32, I64),
                                  (I64.astype(np.int8), I64.astype(np.uint8)),
                                  (X32, X32 > 0)])
def test_binary_promotion_is_numpy_promotion(a, b):
    check(lambda a, b: (a + b, a * b, a / b, np.where(b > a, a, b)), a, b)


def test_python_scalars_are_weak_numpy_scalars_are_not():
    def f(x, i8):
        return x * 2.0, x + 1, i8 + 1, i8 * 3, x * np.float64(2.0), i8 + np.int64(1), \
            x / np.float32(3)
    check(f, X32, I64.astype(np.int8))


def test_true_division_of_integers_is_float64():
    got = check(lambda a, b: a / b, I64, np.full((6, 4), 3))
    assert got.dtype == np.float64


# ---- reductions ------------------------------------------------------------------------
@pytest.mark.parametrize("x", [X, X32, I32], ids=["f64", "f32", "i32"])
def test_reductions_with_axis_and_keepdims(x):
    def f(x):
        return (x.sum(), np.sum(x, axis=0), x.mean(axis=1, keepdims=True),
                np.std(x, axis=0, ddof=1), x.var(), x.max(axis=-1), np.min(x, axis=(0, 1)),
                np.argmax(x, axis=1), x.argmin(), np.prod(x[:2], axis=0), np.cumsum(x, axis=1),
                np.any(x > 1, axis=0), (x > -3).all())
    check(f, x, rtol=1e-5, atol=1e-5)


def test_full_reductions_return_numpy_scalars():
    got = check(lambda x: (x.sum(), np.mean(x), x.max(), np.argmax(x), x[1, 2]), X)
    assert all(isinstance(g, np.generic) for g in got)


def test_int32_sum_accumulates_in_int64():
    got = check(lambda x: np.sum(x, axis=0), I32)
    assert got.dtype == np.int64


# ---- linear algebra, broadcasting ---------------------------------------------------------
def test_matmul_dot_einsum():
    w = rng.standard_normal((4, 3))
    check(lambda x, w: (x @ w, np.dot(x, w), np.einsum("ij,jk->ik", x, w), x.T @ x,
                        np.dot(x[0], x[1]), np.outer(x[0], w[:, 0]), np.tensordot(x, w, 1)),
          X, w)


def test_matmul_mixed_int_float32_is_float64():
    got = check(lambda a, b: a @ b, I64, X32.T)
    assert got.dtype == np.float64


def test_broadcasting_pairwise_distances():
    def f(a, b):
        d = a[:, None, :] - b[None, :, :]
        return np.sqrt((d ** 2).sum(axis=-1))
    check(f, X, X[:3])


def test_linalg_sorting_and_gathering():
    a = rng.standard_normal((4, 4))
    b = rng.standard_normal((4, 3))
    idx = np.array([0, 3, 3, 1])

    def f(a, b, idx):
        spd = a @ a.T + 4 * np.eye(4)
        return (np.linalg.norm(a), np.linalg.norm(a, axis=1), np.linalg.norm(a[0], np.inf),
                np.linalg.solve(spd, b), np.linalg.inv(spd), np.linalg.det(spd),
                np.sort(a, axis=0), np.argsort(a[0]), np.take(a, idx, axis=1), np.take(a, 5),
                np.split(a, 2), np.diff(a, axis=0), np.trace(a), np.tril(a), np.diag(a),
                np.subtract.outer(a[0], a[1]), np.add.reduce(a), np.roll(a, 1, axis=1),
                np.einsum("ij,jk->ik", a, b), np.cumprod(a[:2], axis=0))
    check(f, a, b, idx, rtol=1e-9)


@pytest.mark.parametrize("x", [X, I64], ids=["f64", "i64"])
def test_statistics_and_stacking(x):
    def f(a):
        return (np.median(a), np.median(a, axis=0), np.percentile(a, 30, axis=1, keepdims=True),
                np.quantile(a, 0.7), np.average(a, axis=1), np.ptp(a, axis=0),
                np.count_nonzero(a > 0, axis=0), np.atleast_2d(a[0]), np.atleast_1d(a[0, 0]),
                np.column_stack([a[:, 0], a]), np.meshgrid(a[0], a[:3, 0]))
    check(f, x)


def test_python_number_protocols_read_the_value():
    import math

    def f(a):
        return round(a.sum(), 2), math.floor(a.max()), int(a[0, 0] * 10), float(a.mean())
    check(f, X, graphs=4)                 # each value read runs what is pending


def test_decompositions_covariance_and_search():
    a = rng.standard_normal((5, 4))
    spd = a.T @ a + np.eye(4)

    def f(a, spd):
        return (np.linalg.eigh(spd), np.linalg.eigvalsh(spd), np.linalg.svd(a),
                np.linalg.svd(a, full_matrices=False), np.linalg.svd(a, compute_uv=False),
                np.linalg.qr(a), np.linalg.qr(a, mode="r"), np.linalg.slogdet(spd),
                np.linalg.pinv(a), np.linalg.matrix_power(spd, 3), np.kron(a[:2, :2], spd[0]),
                np.cross(a[:, :3], a[0, 1:]), np.cov(a), np.cov(a, rowvar=False, bias=True),
                np.cov(a[0], a[1]), np.corrcoef(a), np.cov(a.astype(np.float32)),
                np.searchsorted(np.sort(a[0]), a[1]), np.searchsorted(np.sort(a[0]), 0.3))
    check(f, a, spd, rtol=1e-7, atol=1e-10)


def test_eig_is_a_graph_break_with_numpys_result_type():
    got = check(lambda a: np.linalg.eig(a @ a.T + 1), X[:4], graphs=1)
    assert type(got).__name__ == "EigResult"


def test_out_and_inplace_operators_write_the_callers_array():
    def f(x):
        np.exp(x[0], out=x[0])
        x[:, 1] += 1
        x *= 2
        return x.sum()
    a, b = X.copy(), X.copy()
    cf, cnt = compiled(f)
    assert_same(cf(a), f(b))
    np.testing.assert_allclose(a, b)
    assert cnt.frame_count == 1


def test_where_clip_and_friends():
    def f(x):
        return (np.where(x > 0, x, 0.0), np.clip(x, -0.5, 0.5), np.round(x, 2),
                np.isclose(x, 0.1), np.transpose(x), np.concatenate([x, x], axis=1),
                np.stack([x, -x]), x.reshape(2, -1), np.expand_dims(x, 0), x.ravel(),
                np.flip(x, 0), np.zeros_like(x), np.ones_like(x, dtype=np.int32))
    check(f, X)


# ---- indexing ----------------------------------------------------------------------------
def test_basic_and_advanced_indexing():
    idx = np.array([3, 0, 1])

    def f(x, idx):
        return x[1:4], x[:, 2], x[idx], x[idx, 1], x[..., None], x[0, 1]
    check(f, X, idx)


def test_boolean_mask_indexing_breaks_but_is_right():
    got = check(lambda x: (x[x > 0] * 2).sum(), X, graphs=2)
    assert isinstance(got, np.float64)


def test_negative_step_slices_run_in_numpy():
    check(lambda x: x[::-1] * 2, X)      # the break comes first: nothing pending yet


def test_setitem_writes_like_numpy():
    def f(x):
        y = x.copy()
        y[0] = 1.5
        y[:, 1] = y[:, 2] * 2
        y[y > 1] = 0.0                    # a masked fill: captured, no break
        return y
    check(f, X)


# ---- realistic programs ---------------------------------------------------------------
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_softmax_one_graph():
    check(softmax, X)
    got = check(softmax, X32)
    assert got.dtype == np.float32


def kmeans_step(points, centroids):
    d = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)
    labels = d.argmin(axis=1)
    onehot = (labels[:, None] == np.arange(centroids.shape[0])[None, :]).astype(np.float64)
    counts = onehot.sum(axis=0)
    new = onehot.T @ points / np.maximum(counts, 1)[:, None]
    inertia = np.take_along_axis(d, labels[:, None], axis=1).sum()
    return new, labels, inertia


def test_kmeans_step_one_graph():
    pts = np.concatenate([rng.standard_normal((20, 2)) + 4, rng.standard_normal((20, 2)) - 4])
    check(kmeans_step, pts, pts[[0, 25, 39]])


def test_kmeans_loop_reuses_the_graph():
    pts = rng.standard_normal((30, 2))
    cf, cnt = compiled(kmeans_step)
    c_ref = c = pts[:3].copy()
    for _ in range(4):
        c, labels, inertia = cf(pts, c)
        c_ref, labels_ref, inertia_ref = kmeans_step(pts, c_ref)
        np.testing.assert_allclose(c, c_ref)
        np.testing.assert_array_equal(labels, labels_ref)
    assert cnt.frame_count == 1


def logreg_step(w, b, X, y, lr):
    p = 1.0 / (1.0 + np.exp(-(X @ w + b)))
    loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
    gw = X.T @ (p - y) / len(y)
    gb = np.sum(p - y) / len(y)
    w -= lr * gw                          # the caller's weights are updated in place
    return w, b - lr * gb, loss


def test_logistic_regression_steps_reuse_one_graph():
    Xs = rng.standard_normal((32, 5))
    y = (rng.random(32) > 0.5).astype(np.float64)
    w_c, w_e = np.zeros(5), np.zeros(5)
    cf, cnt = compiled(logreg_step)
    b_c = b_e = 0.0
    for _ in range(3):
        got = cf(w_c, b_c, Xs, y, 0.1)
        want = logreg_step(w_e, b_e, Xs, y, 0.1)
        assert_same(got, want)
        b_c, b_e = got[1], want[1]
    np.testing.assert_allclose(w_c, w_e)
    assert cnt.frame_count == 2           # the bias (a scalar) changes: one recompile as input


def test_stencil_loop_with_slice_assignment_one_graph():
    def heat(u, steps, alpha):
        u = u.copy()
        for _ in range(steps):
            u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
        return u
    check(heat, np.sin(np.linspace(0, 3, 50)), 20, 0.2)


def test_float32_mlp_forward_with_inplace_normalisation():
    def mlp(x, w1, b1, w2, b2):
        h = np.tanh(x @ w1 + b1)
        logits = h @ w2 + b2
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        return p, p.argmax(axis=1)
    f32 = [a.astype(np.float32) for a in (X, rng.standard_normal((4, 8)), np.zeros(8),
                                           rng.standard_normal((8, 3)), np.zeros(3))]
    got = check(mlp, *f32, rtol=1e-5, atol=1e-6)
    assert got[0].dtype == np.float32


def test_numerically_stable_logsumexp_and_mse():
    def f(x, y):
        m = np.max(x, axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.sum(np.exp(x - m), axis=1))
        return lse, np.mean((x - y) ** 2)
    check(f, X, X[::1] * 0.5)


# ---- graph breaks ---------------------------------------------------------------------
def test_unsupported_call_breaks_the_graph_and_runs_numpy():
    def f(x):
        y = x @ x.T + 1
        w, v = np.linalg.eig(y)          # not captured: a graph break
        return np.real(w).sum() * 2, np.abs(v).max()
    check(f, X[:4], graphs=2)


def test_unique_breaks_the_graph():
    def f(x):
        u = np.unique(np.round(x * 2))
        return u * 3 + 1
    check(f, X, graphs=2)


def test_explain_counts_breaks_with_reasons():
    def f(x):
        y = np.exp(x)
        u = np.unique(y > 1)
        return y.sum() + u.size
    out = ember._dynamo.explain(f)(X)
    assert out.graph_count == 2 and out.graph_break_count == 1
    assert "np.unique" in out.break_reasons[0].reason


def test_fullgraph_compiles_a_pure_program():
    cf = ember.compile(softmax, backend="eager", fullgraph=True)
    assert_same(cf(X), softmax(X))


def test_errors_leave_eager_mode_as_it_was():
    from ember._core.state import STATE
    before = STATE.overrides

    def f(x):
        np.exp(x)
        raise KeyError("boom")
    with pytest.raises(KeyError):
        ember.compile(f, backend="eager")(X)
    with pytest.raises(ValueError):          # NumPy's own error, not ember's
        ember.compile(lambda a, b: a @ b, backend="eager")(X, X)
    assert STATE.overrides == before


def test_fullgraph_raises_at_an_unsupported_call():
    cf = ember.compile(lambda x: np.unique(x * 2), backend="eager", fullgraph=True)
    with pytest.raises(Unsupported, match="np.unique"):
        cf(X)


# ---- semantics: side effects, identity, guards ------------------------------------------
def test_side_effects_happen_in_order_every_call(capsys):
    log = []

    def f(x):
        y = x * 2
        log.append(float(y.sum()))
        print("total", y.sum())
        x += 1                            # the caller's array is written
        x[0, 0] = -7.0
        return y
    cf, _ = compiled(f)
    a, b = X.copy(), X.copy()
    got = cf(a)
    want = f(b)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(a, b)
    assert log[0] == log[1]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == out[1] == f"total {(X * 2).sum()}"


def test_data_dependent_branch_takes_the_right_path():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return -x
    cf, _ = compiled(f)
    for x in (X, -X - 10, X + 10):
        np.testing.assert_array_equal(cf(x), f(x))


def test_returns_the_input_object_and_views_of_it():
    cf, _ = compiled(lambda x: (x, x[1:]))
    a = X.copy()
    r, v = cf(a)
    assert r is a
    assert np.shares_memory(v, a)


def test_guards_recompile_on_dtype_not_on_values():
    cf, cnt = compiled(softmax)
    cf(X)
    cf(X + 1)
    assert cnt.frame_count == 1
    assert cf(X32).dtype == np.float32
    assert cnt.frame_count == 2


def test_varying_sizes_compile_once_more_as_symbolic():
    cf, cnt = compiled(kmeans_step)
    for n in (10, 20, 30, 40):
        pts = rng.standard_normal((n, 2))
        for g, w in zip(cf(pts, pts[:3]), kmeans_step(pts, pts[:3])):
            assert_same(g, w)
    assert cnt.frame_count == 2


def test_arrays_in_lists_and_keywords():
    def f(xs, *, scale):
        return np.concatenate(xs) * scale
    check(f, [X, X[:2]], scale=np.float32(2))


def test_non_numeric_arrays_pass_through():
    cf, _ = compiled(lambda x, names: (x * 2, names[0]))
    r, n = cf(X, np.array(["a", "b"]))
    assert n == "a"
    np.testing.assert_array_equal(r, X * 2)


def test_array_created_inside_and_mutated_later_keeps_numpy_meaning():
    def f(x):
        buf = np.zeros(4)
        y = x + buf
        buf[0] = 100.0                   # after y was computed: y must not see it
        return y
    check(f, X)


# ---- mixed ember / NumPy programs ----------------------------------------------------
def test_mixed_from_numpy_stays_one_graph():
    def f(x):
        t = ember.from_numpy(x)
        return ember.relu(t * 2).sum(dim=0)
    cf, cnt = compiled(f)
    got = cf(X)
    assert isinstance(got, ember.Tensor) and got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), np.maximum(X * 2, 0).sum(0))
    assert cnt.frame_count == 1


@pytest.mark.parametrize("convert", ["from_numpy", "as_tensor", "tensor", "tensor_f32",
                                     "asarray_copy"])
def test_ember_conversions_of_arrays_stay_in_the_graph(convert):
    to_tensor = {"from_numpy": ember.from_numpy, "as_tensor": ember.as_tensor,
                 "tensor": ember.tensor,
                 "tensor_f32": lambda a: ember.tensor(a, dtype=ember.float32),
                 "asarray_copy": lambda a: ember.asarray(a, copy=True)}[convert]

    def f(x):
        return ember.nn.functional.softmax(to_tensor(np.exp(x) - 1) * 2, -1)
    cf, cnt = compiled(f)
    got, want = cf(X), f(X)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert cnt.frame_count == 1


def test_other_ember_functions_see_the_real_array_as_eagerly():
    with pytest.raises(TypeError):
        ember.relu(X)
    with pytest.raises(TypeError):
        ember.compile(lambda x: ember.relu(x), backend="eager")(X)


def test_mixed_tensor_numpy_one_graph():
    def f(x):
        t = ember.from_numpy(x) * 2
        return np.tanh(t.numpy()) + 1
    cf, cnt = compiled(f)
    got = cf(X)
    np.testing.assert_allclose(got, np.tanh(X * 2) + 1)
    assert cnt.frame_count == 1


# ---- the default backend -------------------------------------------------------------
@pytest.mark.parametrize("prog", ["softmax", "kmeans", "elementwise", "reductions"])
def test_programs_through_inductor_equal_numpy(prog):
    from ember._dynamo.testing import CompileCounterWithBackend
    pts = rng.standard_normal((12, 2))
    fn, args = {
        "softmax": (softmax, (X32,)),
        "kmeans": (kmeans_step, (pts, pts[:3])),
        "elementwise": (lambda x, i: (np.tanh(x) * i - np.sqrt(np.abs(x)) + 1) / 3, (X, I32)),
        "reductions": (lambda x: (x.sum(0), x.mean(), x.max(1, keepdims=True), np.argmin(x, 0),
                                  x.std(axis=1)), (X,)),
    }[prog]
    cnt = CompileCounterWithBackend("inductor")
    cf = ember.compile(fn, backend=cnt)
    for _ in range(2):
        assert_same(cf(*args), fn(*args), rtol=1e-5, atol=1e-6)
    assert cnt.frame_count == 1


# ---- dtype sweeps: every captured ufunc and reduction against NumPy ------------------------
SWEEP_DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float16, np.float32,
                np.float64, np.complex64, np.complex128]


def sample(dtype, shape=(6,)):
    r = np.random.default_rng(1)
    kind = np.dtype(dtype).kind
    if kind == "b":
        return r.random(shape) > 0.5
    if kind in "iu":
        return r.integers(0, 5, shape).astype(dtype)       # zeros included: x // 0 is 0
    if kind == "c":
        return (r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(dtype)
    return (r.random(shape) * 3 + 0.5).astype(dtype)


def same_or_same_error(fn, *args):
    """``fn`` compiled equals ``fn`` in NumPy, or both raise the same exception type."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = fn(*args)
        except Exception as e:
            with pytest.raises(type(e)):
                ember.compile(fn, backend="eager")(*args)
            return
        got = ember.compile(fn, backend="eager")(*args)
    assert_same(got, want, rtol=2e-3, atol=2e-3, equal_nan=True)


def _ufunc_ids():
    from ember._dynamo.numpy_ufuncs import UFUNCS
    return [u for u in UFUNCS if u is not np.matmul]


@pytest.mark.parametrize("ufunc", _ufunc_ids(), ids=lambda u: u.__name__)
def test_every_captured_ufunc_matches_numpy_on_every_dtype(ufunc):
    for d1 in SWEEP_DTYPES:
        if ufunc.nin == 1:
            same_or_same_error(ufunc, sample(d1))
            continue
        for d2 in SWEEP_DTYPES[::2] + [d1]:
            same_or_same_error(ufunc, sample(d1), sample(d2)[::-1].copy())
        for scalar in (2, 2.5, True):
            same_or_same_error(lambda x, s=scalar: ufunc(x, s), sample(d1))


REDUCTIONS = [np.sum, np.prod, np.mean, np.std, np.var, np.max, np.min, np.argmax, np.argmin,
              np.all, np.any, np.median, np.ptp]


@pytest.mark.parametrize("func", REDUCTIONS, ids=lambda f: f.__name__)
def test_every_captured_reduction_matches_numpy_on_every_dtype(func):
    for d in SWEEP_DTYPES:
        x = sample(d, (3, 4))
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}, {"axis": (0, 1)},
                   {"axis": None, "keepdims": True}):
            if func in (np.argmax, np.argmin) and isinstance(kw.get("axis"), tuple):
                continue
            same_or_same_error(lambda x, kw=kw: func(x, **kw), x)
        if func not in (np.argmax, np.argmin, np.all, np.any, np.median, np.ptp):
            same_or_same_error(lambda x: func(x[:2], axis=1, dtype=np.float32), x)


A3 = np.arange(60.0).reshape(4, 5, 3)
INDICES = [0, -1, (1, 2), (1, 2, 0), slice(1, 3), (slice(None), 2), (Ellipsis, 1), (None, 0),
           (0, None, slice(1, 4, 2)), [0, 2], ([0, 1], [2, 3]), (slice(None), [0, 4]),
           (np.array([0, 3]),), (slice(None), np.array([[0, 1], [2, 3]])),
           (A3[:, 0, 0] > 20,), (A3 > 30,), (1, slice(None), [0, 2]),
           ([0, 1], slice(None), [1, 2]), (slice(None, None, -1),), (np.int64(1),),
           (np.array(1),), (), (Ellipsis,), (True,), ([True, False, True, False],),
           (slice(10, 20),), (-5,), (5,)]


@pytest.mark.parametrize("index", INDICES, ids=lambda i: repr(i)[:40])
def test_indexing_and_assignment_match_numpy(index):
    same_or_same_error(lambda a: a[index] * 1, A3)

    def assign(a):
        b = a.copy()
        b[index] = -1.0
        return b
    same_or_same_error(assign, A3)
