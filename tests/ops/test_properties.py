"""Property tests (hypothesis): broadcasting and type promotion agree with torch."""
import warnings

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

import ember

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]
SETTINGS = settings(deadline=None, max_examples=200, derandomize=True)


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _array(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) > 0.5)
    dt = _np_dtype(dtype)
    if dt.kind in "iu":
        return np.asarray(rng.integers(1 if dt.kind == "u" else -5, 6, size=shape).astype(dt))
    a = rng.uniform(-3, 3, shape)
    if dt.kind == "c":
        a = a + 1j * rng.uniform(-3, 3, shape)
    return np.asarray(a.astype(dt))


def _pair(a, dtype):
    """The same values as an ember and a torch tensor."""
    e = ember.from_numpy(a.copy())
    if dtype == "bfloat16":
        t = torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
    else:
        t = torch.from_numpy(a.copy())
    return e, t


def _to_np(x):
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.complex32:
            return x.to(torch.complex64).numpy(), "complex32"
        if x.dtype == torch.bfloat16:
            return x.float().numpy(), "bfloat16"
        return x.numpy(), str(x.dtype).split(".")[-1]
    d = x.dtype.name
    a = x._data.astype(np.float32) if d == "bfloat16" else x._data
    return a, d


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except Exception as exc:  # noqa: BLE001 - compared with torch's exception below
        return None, type(exc)


def _same(e_fn, t_fn, tol=1e-2):
    e, e_exc = _outcome(e_fn)
    t, t_exc = _outcome(t_fn)
    assert (e_exc is None) == (t_exc is None), (e_exc, t_exc)
    if t_exc is not None:
        assert issubclass(e_exc, t_exc) or e_exc is t_exc, (e_exc, t_exc)
        return
    ea, ed = _to_np(e)
    ta, td = _to_np(t)
    assert ed == td or {ed, td} == {"complex64", "complex32"}, (ed, td)
    assert ea.shape == ta.shape
    np.testing.assert_allclose(ea.astype(np.complex128), ta.astype(np.complex128), rtol=tol,
                               atol=tol, equal_nan=True)


dims = st.integers(1, 4)
shapes = st.lists(dims, min_size=0, max_size=4)


@st.composite
def broadcastable_pair(draw):
    """Two shapes that broadcast: drop leading dims and set some sizes to 1."""
    out = draw(shapes)
    a, b = [], []
    for s in out:
        a.append(1 if draw(st.booleans()) else s)
        b.append(1 if draw(st.booleans()) else s)
    return tuple(a[draw(st.integers(0, len(a))):]), tuple(b[draw(st.integers(0, len(b))):])


OPS = {
    "add": lambda lib, x, y: lib.add(x, y),
    "mul": lambda lib, x, y: x * y,
    "where": lambda lib, x, y: lib.where(x > 0 if not x.dtype.is_complex else x.real > 0, x, y),
    "sub": lambda lib, x, y: x - y,
}


@SETTINGS
@given(broadcastable_pair(), st.sampled_from(sorted(OPS)), st.integers(0, 2 ** 16))
def test_broadcast_compatible(shapes2, op, seed):
    sa, sb = shapes2
    a, b = _array(sa, "float32", seed), _array(sb, "float32", seed + 1)
    (ea, ta), (eb, tb) = _pair(a, "float32"), _pair(b, "float32")
    _same(lambda: OPS[op](ember, ea, eb), lambda: OPS[op](torch, ta, tb), tol=1e-6)


@SETTINGS
@given(shapes, shapes, st.sampled_from(sorted(OPS)))
def test_broadcast_random_shapes(sa, sb, op):
    """Arbitrary shapes: same result shape as torch, or the same exception type."""
    a, b = _array(tuple(sa), "float64", 0), _array(tuple(sb), "float64", 1)
    (ea, ta), (eb, tb) = _pair(a, "float64"), _pair(b, "float64")
    _same(lambda: OPS[op](ember, ea, eb), lambda: OPS[op](torch, ta, tb), tol=1e-9)


@SETTINGS
@given(shapes, shapes)
def test_inplace_broadcast(sa, sb):
    a, b = _array(tuple(sa), "float64", 0), _array(tuple(sb), "float64", 1)
    (ea, ta), (eb, tb) = _pair(a, "float64"), _pair(b, "float64")
    _same(lambda: ea.clone().add_(eb), lambda: ta.clone().add_(tb), tol=1e-9)


BINOPS = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y, "eq": lambda x, y: x == y, "lt": lambda x, y: x < y,
    "maximum": lambda x, y: x.maximum(y) if not isinstance(y, (int, float, complex)) else x,
}


@SETTINGS
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.booleans(), st.booleans(),
       st.sampled_from(sorted(BINOPS)))
def test_promotion_tensor_tensor(da, db, a0d, b0d, op):
    if {da, db} & {"float16"} and {da, db} & {"complex64", "complex128"}:
        return  # known difference: torch makes complex32 (absent from NumPy and ember) here
    a = _array(() if a0d else (2, 3), da, 1)
    b = _array(() if b0d else (3,), db, 2)
    (ea, ta), (eb, tb) = _pair(a, da), _pair(b, db)
    _same(lambda: BINOPS[op](ea, eb), lambda: BINOPS[op](ta, tb))


scalars = st.one_of(st.booleans(), st.integers(-100, 100),
                    st.floats(-100, 100, allow_nan=False, width=32),
                    st.complex_numbers(max_magnitude=10, allow_nan=False, allow_infinity=False))


@SETTINGS
@given(st.sampled_from(DTYPES), scalars, st.booleans(), st.booleans(),
       st.sampled_from(["add", "mul", "sub", "div", "eq", "lt"]))
def test_promotion_tensor_scalar(da, s, zero_dim, reflected, op):
    a = _array(() if zero_dim else (4,), da, 3)
    ea, ta = _pair(a, da)
    f = BINOPS[op]
    if reflected:
        _same(lambda: f(s, ea), lambda: f(s, ta))
    else:
        _same(lambda: f(ea, s), lambda: f(ta, s))


@SETTINGS
@given(st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.booleans())
def test_result_type_matches_operation(da, db, b0d):
    """ember.result_type predicts the dtype ember's own arithmetic produces."""
    ea = ember.from_numpy(_array((2,), da, 0))
    eb = ember.from_numpy(_array(() if b0d else (2,), db, 1))
    try:
        r = ea * eb
    except RuntimeError:
        return
    assert r.dtype is ember.result_type(ea, eb)
