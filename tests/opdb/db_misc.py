"""Assorted APIs: square, logaddexp(2), rad2deg/deg2rad, heaviside, gcd/lcm, top-level
in-place and special aliases, isin, tril/triu_indices, cov, corrcoef, dist, ravel,
unravel_index, block_diag, trapezoid family, histogram, renorm, windows, stft/istft."""
import numpy as np

from .core import COMPLEX, FLOATS, HALVES, INTS, OpInfo, SampleInput, make
from .db_pointwise import ALL, REAL, binary, mk, unary

FLOAT_ONLY = HALVES + FLOATS


def _inplace(name):
    return lambda lib, x, *a, **k: getattr(x.clone(), name)(*a, **k)


def _top_inplace(name):
    return lambda lib, x, *a, **k: getattr(lib, name)(x.clone(), *a, **k)


def _pair(lo=None, hi=None, rlo=None, rhi=None):
    """Two same-dtype tensors (ops that reject Python numbers and mixed dtypes)."""
    def gen(dtype, rng):
        a = dict(low=lo, high=hi)
        b = dict(low=lo if rlo is None else rlo, high=hi if rhi is None else rhi)
        yield SampleInput((mk((4,), dtype, rng, **a), mk((4,), dtype, rng, **b)), name="same")
        yield SampleInput((mk((3, 1), dtype, rng, **a), mk((1, 4), dtype, rng, **b)),
                          name="broadcast")
        yield SampleInput((mk((2, 3), dtype, rng, **a), mk((), dtype, rng, **b)), name="0d")
        yield SampleInput((mk((2, 3), dtype, rng, noncontig=True, **a),
                           mk((2, 3), dtype, rng, noncontig=True, **b)), name="noncontig")
        yield SampleInput((mk((0, 3), dtype, rng, **a), mk((3,), dtype, rng, **b)), name="empty")
    return gen


def _x_only(gen):
    """Samples whose first argument has no derivative (igamma's ``input``)."""
    def g(dtype, rng):
        for s in gen(dtype, rng):
            s.grad_args = (1,)
            yield s
    return g


def _heaviside(dtype, rng):
    for s in _pair(-2, 2)(dtype, rng):
        if s.args[0].dtype.kind == "f":
            s.args[0][..., :1] = 0  # the values branch
        yield s


def _errors_binary_tensors(name):
    def gen(rng):
        yield SampleInput((make((3,), "float32", rng), 2.0)), TypeError
        yield SampleInput((make((3,), "float32", rng), make((4,), "float32", rng))), RuntimeError
    return gen


def _heaviside_errors(rng):
    yield SampleInput((make((3,), "float32", rng), make((3,), "float64", rng))), RuntimeError
    yield SampleInput((make((3,), "complex64", rng), make((3,), "complex64", rng))), RuntimeError
    yield SampleInput((make((3,), "float32", rng), 0.5)), TypeError


# ---- composites -------------------------------------------------------------------------
def _isin(dtype, rng):
    e = mk((3, 4), dtype, rng, low=-4, high=5)
    yield SampleInput((e, mk((5,), dtype, rng, low=-4, high=5)), name="tensor")
    yield SampleInput((e, mk((2, 2), dtype, rng, low=-4, high=5)), {"invert": True}, name="inv")
    yield SampleInput((e, 2), name="scalar-test")
    yield SampleInput((3, mk((5,), dtype, rng, low=0, high=5)), name="scalar-elements")
    yield SampleInput((np.unique(mk((6,), dtype, rng, low=-4, high=5)),
                       mk((0,), dtype, rng)), {"assume_unique": True}, name="empty-test")
    yield SampleInput((mk((2, 3), dtype, rng, noncontig=True, low=-4, high=5),
                       np.array([1, 2], dtype=np.int64)), name="mixed")


def _isin_errors(rng):
    yield SampleInput((make((3,), "complex64", rng), make((3,), "complex64", rng))), RuntimeError
    yield SampleInput((make((3,), "bool", rng), make((3,), "bool", rng))), RuntimeError
    yield SampleInput((2, 3)), TypeError


def _tri(dtype, rng):
    yield SampleInput((4, 3), name="square-ish")
    yield SampleInput((3, 5, 1), name="offset")
    yield SampleInput((3, 5, -2), {"dtype": "int32"}, name="dtype")
    yield SampleInput((0, 4), name="empty")


def _tri_fn(name):
    def fn(lib, *args, **kw):
        if "dtype" in kw:
            kw = dict(kw, dtype=getattr(lib, kw["dtype"]))
        return getattr(lib, name)(*args, **kw)
    return fn


def _tri_errors(rng):
    yield SampleInput((-1, 3)), RuntimeError
    yield SampleInput((3, -1)), RuntimeError


def _cov(dtype, rng):
    x = make((3, 6), dtype, rng)
    yield SampleInput((x,), name="2d")
    yield SampleInput((make((5,), dtype, rng),), name="1d")
    yield SampleInput((x,), {"correction": 0}, name="corr0")
    yield SampleInput((x,), {"correction": 2}, name="corr2")
    fw = rng.integers(0, 4, 6)
    aw = rng.uniform(0.1, 2, 6).astype(x.dtype)
    yield SampleInput((x, fw), name="fweights", grad_args=(0,))
    yield SampleInput((x, None, aw), name="aweights", grad_args=(0,))
    yield SampleInput((x, fw, aw), {"correction": 3}, name="both", grad_args=(0,))
    yield SampleInput((make((2, 4), dtype, rng, noncontig=True),), name="noncontig")


def _cov_errors(rng):
    x = make((2, 3), "float32", rng)
    yield SampleInput((make((2, 2, 2), "float32", rng),)), RuntimeError
    yield SampleInput((x, np.array([1.0, 2.0, 3.0]))), RuntimeError
    yield SampleInput((x, np.array([1, -2, 3]))), RuntimeError
    yield SampleInput((x, None, np.array([1, 2, 3]))), RuntimeError
    yield SampleInput((x, None, np.array([1.0, 2.0]))), RuntimeError
    yield SampleInput((x, None, np.array([1.0, -2.0, 1.0]))), RuntimeError


def _cov_fn(method=False):
    def fn(lib, x, fweights=None, aweights=None, **kw):
        f = x.cov if method else (lambda **k: lib.cov(x, **k))
        return f(fweights=fweights, aweights=aweights, **kw)
    return fn


def _corrcoef(dtype, rng):
    yield SampleInput((make((3, 6), dtype, rng),), name="2d")
    yield SampleInput((make((6,), dtype, rng),), name="1d")
    yield SampleInput((make((2, 5), dtype, rng, noncontig=True),), name="noncontig")


def _dist(dtype, rng):
    a, b = make((3, 4), dtype, rng), make((4,), dtype, rng)
    for p in (2, 1, 3.5, 0, float("inf"), -float("inf")):
        yield SampleInput((a, b, p), name=f"p{p}", grad_args=(0, 1) if p != 0 else ())
    yield SampleInput((make((), dtype, rng), make((2, 2), dtype, rng)), name="0d")


def _dist_errors(rng):
    yield SampleInput((make((3,), "int64", rng), make((3,), "int64", rng))), RuntimeError
    yield SampleInput((make((3,), "float32", rng), make((4,), "float32", rng))), RuntimeError


def _ravel(dtype, rng):
    yield SampleInput((make((2, 3, 4), dtype, rng, noncontig=True),), name="noncontig")
    yield SampleInput((make((), dtype, rng),), name="0d")
    yield SampleInput((make((0, 2), dtype, rng),), name="empty")


def _unravel(dtype, rng):
    yield SampleInput((rng.integers(0, 24, (3, 4)).astype(dtype), (2, 3, 4)), name="3d")
    yield SampleInput((np.array(5, dtype=dtype), (2, 3)), name="0d")
    yield SampleInput((rng.integers(0, 7, (4,)).astype(dtype), 7), name="int-shape")
    yield SampleInput((rng.integers(0, 6, (4,)).astype(dtype), (6,)), name="1d")


def _unravel_errors(rng):
    yield SampleInput((make((3,), "float32", rng), (2, 3))), TypeError
    yield SampleInput((np.array([1, 2]), (-1, 3))), ValueError


def _block_diag(dtype, rng):
    yield SampleInput((make((2, 3), dtype, rng), make((4,), dtype, rng), make((), dtype, rng),
                       make((1, 2), dtype, rng, noncontig=True)), name="mixed-dims")
    yield SampleInput((make((2, 2), dtype, rng),), name="one")
    yield SampleInput((make((0, 2), dtype, rng), make((2, 0), dtype, rng),
                       make((2, 2), dtype, rng)), name="empty-blocks")
    yield SampleInput((make((2, 2), dtype, rng), make((2,), "int64", rng)), name="promote",
                      grad_args=(0,))


def _block_diag_errors(rng):
    yield SampleInput((make((2, 2, 2), "float32", rng),)), RuntimeError


def _trapz(dtype, rng):
    y = make((3, 5), dtype, rng)
    yield SampleInput((y,), name="default")
    yield SampleInput((y,), {"dx": 0.5}, name="dx")
    yield SampleInput((y,), {"dim": 0}, name="dim0")
    yield SampleInput((y, np.sort(make((5,), dtype, rng))), name="x1d", grad_args=(0, 1))
    yield SampleInput((y, make((3, 5), dtype, rng)), name="x-full")
    yield SampleInput((y, np.sort(make((3,), dtype, rng))), {"dim": 0}, name="x1d-dim0")
    yield SampleInput((make((2, 4), dtype, rng, noncontig=True),), {"dim": -1}, name="noncontig")
    yield SampleInput((make((3, 0), dtype, rng),), name="empty-dim")
    yield SampleInput((make((0, 3), dtype, rng),), name="empty-other")
    yield SampleInput((make((3, 1), dtype, rng),), name="one-point")


def _trapz_int(dtype, rng):
    if dtype == "int64":
        y = make((3, 5), dtype, rng)
        yield SampleInput((y,), {"dx": 2}, name="int-dx")
        yield SampleInput((y, np.arange(5)), name="int-x")
        return
    yield from _trapz(dtype, rng)


def _trapz_errors(rng):
    yield SampleInput((make((3, 5), "float32", rng), make((4,), "float32", rng))), RuntimeError
    yield SampleInput((make((), "float32", rng),)), IndexError


def _histogram(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, 6), name="bins")
    yield SampleInput((x, 4), {"range": (-1.0, 2.0)}, name="range")
    yield SampleInput((x, np.array([-3.0, -1, 0, 0.5, 3]).astype(x.dtype)), name="edges")
    yield SampleInput((x, 5, make((4, 5), dtype, rng, low=0.1, high=2)), {"density": True},
                      name="weight-density")
    yield SampleInput((x, np.array([-3.0, 0, 3]).astype(x.dtype)), {"density": True},
                      name="edges-density")
    yield SampleInput((np.full((3,), 2.0, dtype=x.dtype), 3), name="constant")
    yield SampleInput((make((0,), dtype, rng), 3), name="empty")


def _histogram_fn(method=False):
    def fn(lib, x, bins, weight=None, **kw):
        return (x.histogram if method else (lambda *a, **k: lib.histogram(x, *a, **k)))(
            bins, weight=weight, **kw)
    return fn


def _histogram_errors(rng):
    x = make((5,), "float32", rng)
    yield SampleInput((make((5,), "int64", rng), 3)), NotImplementedError
    yield SampleInput((x, 0)), RuntimeError
    yield SampleInput((x, 3), {"range": (3.0, 1.0)}), RuntimeError
    yield SampleInput((x, 3, make((5,), "float64", rng))), RuntimeError
    yield SampleInput((np.array([np.inf, 1.0], dtype=np.float32), 3)), RuntimeError
    yield SampleInput((x, np.array([0.0, 1.0], dtype=np.float32)), {"range": (0.0, 1.0)}), \
        TypeError


def _renorm(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, 2, 0, 2.0), name="p2-dim0")
    yield SampleInput((x, 1, 1, 3.0), name="p1-dim1")
    yield SampleInput((x, float("inf"), -1, 1.5), name="inf")
    yield SampleInput((make((2, 3, 2), dtype, rng, noncontig=True), 3, 1, 1.0), name="3d")
    yield SampleInput((x, 2, 0, 100.0), name="below-max")


def _renorm_errors(rng):
    x = make((3, 4), "float32", rng)
    yield SampleInput((make((3,), "float32", rng), 2, 0, 1.0)), RuntimeError
    yield SampleInput((x, 0, 0, 1.0)), RuntimeError
    yield SampleInput((x, 2, 0, -1.0)), RuntimeError


def _window(name):
    def fn(lib, n, *args, **kw):
        if "dtype" in kw:
            kw = dict(kw, dtype=getattr(lib, kw["dtype"]))
        return getattr(lib, name)(n, *args, **kw)

    def samples(dtype, rng):
        for n in (0, 1, 2, 7, 16):
            for periodic in (True, False):
                yield SampleInput((n, periodic), {"dtype": dtype}, name=f"{n}-{periodic}")
        if name == "hamming_window":
            yield SampleInput((9, True, 0.5, 0.4), {"dtype": dtype}, name="alpha-beta")
        if name == "kaiser_window":
            yield SampleInput((9, False, 5.0), {"dtype": dtype}, name="beta")

    def errors(rng):
        yield SampleInput((-1,)), RuntimeError
        yield SampleInput((4,), {"dtype": "int64"}), RuntimeError
    return dict(fn=fn, samples=samples, errors=errors)


def _stft_fn(lib, x, n_fft, window=None, **kw):
    return lib.stft(x, n_fft, window=window, return_complex=True, **kw)


def _stft(dtype, rng):
    x = make((40,), dtype, rng)
    w = np.hanning(10).astype(dtype)
    yield SampleInput((x, 10, w), name="default")
    yield SampleInput((make((2, 37), dtype, rng), 8, np.hanning(6).astype(dtype)),
                      {"hop_length": 3, "win_length": 6}, name="batched-short-window")
    yield SampleInput((x, 10, w), {"center": False, "normalized": True}, name="no-center")
    yield SampleInput((x, 10, w), {"onesided": False, "pad_mode": "constant"}, name="twosided")
    yield SampleInput((x, 10, w), {"pad_mode": "replicate"}, name="replicate")
    yield SampleInput((x, 10, w), {"pad_mode": "circular", "hop_length": 4}, name="circular")
    yield SampleInput((x, 10, np.hanning(6).astype(dtype)),
                      {"center": False, "win_length": 6, "align_to_window": True}, name="align")


def _stft_complex(dtype, rng):
    x = make((30,), dtype, rng)
    yield SampleInput((x, 8, np.hanning(8)), {"onesided": False}, name="complex")


def _stft_errors(rng):
    x = make((20,), "float32", rng)
    w = np.ones(8, dtype=np.float32)
    yield SampleInput((x, 64, np.ones(64, dtype=np.float32))), RuntimeError
    yield SampleInput((x, 8, w), {"hop_length": 0}), RuntimeError
    yield SampleInput((x, 8, w), {"win_length": 9}), RuntimeError
    yield SampleInput((x, 8, np.ones(5, dtype=np.float32))), RuntimeError
    yield SampleInput((make((2, 2, 20), "float32", rng), 8, w)), RuntimeError
    yield SampleInput((make((20,), "int32", rng), 8, w)), RuntimeError
    yield SampleInput((x, 8, w), {"pad_mode": "nope"}), NotImplementedError
    yield SampleInput((make((3,), "float32", rng), 8, w)), RuntimeError
    yield SampleInput((x, 8, w), {"align_to_window": True}), RuntimeError


def _istft_fn(lib, spec, n_fft, window, **kw):
    return lib.istft(spec, n_fft, window=window, **kw)


def _periodic_hann(n):
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


def _istft(dtype, rng):
    cdt = {"float32": "complex64", "float64": "complex128"}[dtype]
    spec = make((6, 21), cdt, rng)
    spec[0].imag = 0  # DC and Nyquist bins of a real signal's spectrum are real
    spec[-1].imag = 0
    w = _periodic_hann(10).astype(dtype)
    yield SampleInput((spec, 10, w), name="default")
    yield SampleInput((spec, 10, w), {"length": 30}, name="length")
    yield SampleInput((spec, 10, w), {"normalized": True, "hop_length": 3}, name="normalized")
    yield SampleInput((make((2, 6, 9), cdt, rng), 10, _periodic_hann(8).astype(dtype)),
                      {"win_length": 8, "hop_length": 4}, name="batched-short-window")
    full = make((10, 11), cdt, rng)
    yield SampleInput((full, 10, w), {"onesided": False, "return_complex": True},
                      name="complex-out")
    yield SampleInput((full, 10, w), {"hop_length": 3}, name="full-real")


def _istft_errors(rng):
    w = _periodic_hann(10).astype(np.float32)
    yield SampleInput((make((6, 21), "float32", rng), 10, w)), RuntimeError
    yield SampleInput((make((6, 21), "complex64", rng), 10, w), {"center": False}), RuntimeError
    yield SampleInput((make((6, 21), "complex64", rng), 10, w),
                      {"return_complex": True}), RuntimeError


OPS = [
    OpInfo("square", samples=unary(), dtypes=ALL),
    OpInfo("Tensor.square", samples=unary(), dtypes=ALL),
    OpInfo("square_", fn=_inplace("square_"), samples=unary(), dtypes=ALL,
           grad=False),
    OpInfo("square_top", fn=_top_inplace("square_"), samples=unary(), dtypes=FLOATS, grad=False),
    OpInfo("logaddexp", samples=_pair(), dtypes=REAL + COMPLEX,
           errors=_errors_binary_tensors("logaddexp")),
    OpInfo("logaddexp2", samples=_pair(), dtypes=REAL + COMPLEX,
           errors=_errors_binary_tensors("logaddexp2")),
    OpInfo("Tensor.logaddexp", samples=_pair(), dtypes=FLOATS),
    OpInfo("rad2deg", samples=unary(), dtypes=ALL),
    OpInfo("deg2rad", samples=unary(), dtypes=ALL),
    OpInfo("rad2deg_", fn=_inplace("rad2deg_"), samples=unary(), dtypes=("int64",) + FLOATS,
           grad=False),
    OpInfo("deg2rad_top", fn=_top_inplace("deg2rad_"), samples=unary(), dtypes=FLOATS,
           grad=False),
    OpInfo("heaviside", samples=_heaviside, dtypes=REAL + COMPLEX, grad=False,
           errors=_heaviside_errors),
    OpInfo("Tensor.heaviside_", fn=_inplace("heaviside_"), samples=_heaviside, dtypes=FLOATS,
           grad=False),
    OpInfo("gcd", samples=_pair(-20, 20), dtypes=ALL, grad=False,
           errors=_errors_binary_tensors("gcd")),
    OpInfo("lcm", samples=_pair(-12, 12), dtypes=ALL, grad=False),
    OpInfo("gcd_top", fn=_top_inplace("gcd_"), samples=_pair(-20, 20), dtypes=INTS, grad=False),
    OpInfo("lcm_top", fn=_top_inplace("lcm_"), samples=_pair(-12, 12), dtypes=INTS, grad=False),
    OpInfo("xlogy_top", fn=_top_inplace("xlogy_"), samples=binary(0.1, 3, scalars=(2.5,)),
           dtypes=FLOATS, grad=False),
    OpInfo("sinc_top", fn="sinc", samples=unary(), dtypes=FLOAT_ONLY + COMPLEX, atol=1e-5),
    OpInfo("sinc_top_", fn=_top_inplace("sinc_"), samples=unary(), dtypes=FLOATS, grad=False),
    OpInfo("i0_top", fn="i0", samples=unary(), dtypes=INTS + FLOATS, rtol=1e-5),
    OpInfo("i0_top_", fn=_top_inplace("i0_"), samples=unary(), dtypes=FLOATS, grad=False,
           rtol=1e-5),
    OpInfo("igamma_top", fn="igamma", samples=_x_only(_pair(0.5, 3)), dtypes=FLOATS, rtol=1e-5),
    OpInfo("igammac_top", fn="igammac", samples=_x_only(_pair(0.5, 3)), dtypes=FLOATS,
           rtol=1e-5),
    OpInfo("isin", samples=_isin, dtypes=INTS + FLOAT_ONLY, grad=False, errors=_isin_errors),
    OpInfo("tril_indices", fn=_tri_fn("tril_indices"), samples=_tri, dtypes=("int64",),
           grad=False, errors=_tri_errors),
    OpInfo("triu_indices", fn=_tri_fn("triu_indices"), samples=_tri, dtypes=("int64",),
           grad=False, errors=_tri_errors),
    OpInfo("cov", fn=_cov_fn(), samples=_cov, dtypes=FLOATS + COMPLEX, errors=_cov_errors),
    OpInfo("cov_int", fn="cov", samples=lambda d, r: iter([SampleInput(
        (make((2, 5), d, r),))]), dtypes=INTS, grad=False),
    OpInfo("Tensor.cov", fn=_cov_fn(True), samples=_cov, dtypes=("float64",)),
    OpInfo("corrcoef", samples=_corrcoef, dtypes=FLOATS + COMPLEX),
    OpInfo("dist", samples=_dist, dtypes=FLOATS, errors=_dist_errors, atol=1e-5, rtol=1e-5),
    OpInfo("Tensor.dist", samples=_dist, dtypes=("float64",)),
    OpInfo("ravel", samples=_ravel, dtypes=ALL),
    OpInfo("unravel_index", samples=_unravel, dtypes=("int64", "int32", "uint8"), grad=False,
           errors=_unravel_errors),
    OpInfo("block_diag", samples=_block_diag, dtypes=REAL + COMPLEX, errors=_block_diag_errors),
    OpInfo("trapezoid", samples=_trapz_int, dtypes=("int64",) + FLOATS, errors=_trapz_errors),
    OpInfo("trapz", samples=_trapz, dtypes=FLOATS),
    OpInfo("cumulative_trapezoid", samples=_trapz_int, dtypes=("int64",) + FLOATS,
           errors=_trapz_errors),
    OpInfo("histogram", fn=_histogram_fn(), samples=_histogram, dtypes=FLOATS, grad=False,
           errors=_histogram_errors),
    OpInfo("Tensor.histogram", fn=_histogram_fn(True), samples=_histogram, dtypes=("float64",),
           grad=False),
    OpInfo("renorm", samples=_renorm, dtypes=FLOATS, errors=_renorm_errors),
    OpInfo("Tensor.renorm_", fn=_inplace("renorm_"), samples=_renorm, dtypes=FLOATS),
    *[OpInfo(n, grad=False, dtypes=FLOAT_ONLY, **_window(n)) for n in
      ("hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window")],
    OpInfo("stft", fn=_stft_fn, samples=_stft, dtypes=FLOATS, errors=_stft_errors, atol=1e-5,
           rtol=1e-5),
    OpInfo("stft_complex", fn=_stft_fn, samples=_stft_complex, dtypes=COMPLEX, atol=1e-5,
           rtol=1e-5),
    OpInfo("istft", fn=_istft_fn, samples=_istft, dtypes=FLOATS, errors=_istft_errors,
           atol=1e-5, rtol=1e-5),
]
