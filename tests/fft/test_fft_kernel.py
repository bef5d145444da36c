"""ember's C FFT (`ember._core.ckernels.fft`): the kernel against NumPy's float64 FFT for
every power-of-two length 1..2**16 and batch sizes that leave every tail of a row block,
and the public transforms that route through it against torch.fft (every norm, odd leading
shapes, non-last and several dims, threads, gradients, the scipy fallback)."""
import os

import numpy as np
import pytest
import torch

import ember
from ember._core.ckernels import fft as ck

RNG = np.random.default_rng(17)
# float32: max abs error relative to the largest |X|
TOL = {np.float32: 2e-6, np.float64: 1e-13}
BATCHES = (1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 33, 40)
# CI has a C compiler, so there the kernel is always tested (a build failure fails); elsewhere
# (EMBER_CKERNELS=0, no compiler) only the fallback tests run, as in tests/_core/test_ckernels
needs_c = pytest.mark.skipif(not ck.available() and not os.environ.get("CI"),
                             reason=f"no compiled FFT here: {ck.status()['reason']}")


def _rel_err(got, ref):
    ref = np.asarray(ref)
    return np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-300)


@needs_c
def test_kernel_builds():
    assert ck.available(), ck.status()["reason"]


@needs_c
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("log2n", range(17))
def test_kernel_matches_numpy(dtype, log2n):
    n = 1 << log2n
    batches = BATCHES if n <= 1024 else (1, 5, 17) if n <= 8192 else (3,)
    cdt = np.result_type(dtype, np.complex64)
    for rows in batches:
        x = RNG.standard_normal((rows, n))
        c = x + 1j * RNG.standard_normal((rows, n))
        xd, cd = x.astype(dtype), c.astype(cdt)
        got = ck.run(ck.C2C_FWD, cd, n)
        assert got.dtype == cdt and got.shape == (rows, n)
        assert _rel_err(got, np.fft.fft(cd.astype(complex))) <= TOL[dtype], (rows, "fft")
        got = ck.run(ck.C2C_INV, cd, n, 1.0 / n)
        assert _rel_err(got, np.fft.ifft(cd.astype(complex))) <= TOL[dtype], (rows, "ifft")
        if n < 2:
            assert ck.run(ck.R2C, xd, n) is None  # the real kinds need n >= 2
            continue
        got = ck.run(ck.R2C, xd, n, 0.5)
        assert got.dtype == cdt and got.shape == (rows, n // 2 + 1)
        ref = 0.5 * np.fft.rfft(xd.astype(float))
        assert _rel_err(got, ref) <= TOL[dtype], (rows, "rfft")
        assert not got[:, 0].imag.any() and not got[:, -1].imag.any()
        # irfft ignores the imaginary parts of DC and Nyquist, as NumPy and torch do
        X = cd[:, : n // 2 + 1]
        got = ck.run(ck.C2R, X, n, 1.0 / n)
        assert got.dtype == np.dtype(dtype) and got.shape == (rows, n)
        assert _rel_err(got, np.fft.irfft(X.astype(complex), n)) <= TOL[dtype], (rows, "irfft")


@needs_c
def test_kernel_refuses_what_it_does_not_take(monkeypatch):
    monkeypatch.setattr(ck, "FAST_LEVELS", ck.FAST_LEVELS + ("DEFAULT",))
    x = RNG.standard_normal((4, 12))
    assert ck.run(ck.R2C, x, 12) is None  # not a power of two
    assert ck.run(ck.R2C, x.astype(np.complex128), 12) is None
    assert ck.run(ck.C2C_FWD, x[:, :8], 8) is None  # real input to c2c
    assert ck.run(ck.C2R, x[:, :8].astype(complex), 8) is None  # needs n // 2 + 1 = 5 bins
    assert ck.run(ck.R2C, x.astype(np.float16)[:, :8], 8) is None
    # a strided input is copied first
    got = ck.run(ck.R2C, x[:, ::3], 4)
    np.testing.assert_allclose(got, np.fft.rfft(x[:, ::3]), atol=1e-13)
    assert not ck.takes(1 << 16, 1, np.float32)  # one row: scipy's is faster
    assert not ck.takes(256, 16, np.float32)  # too small
    assert ck.takes(4096, 2, np.complex64) and ck.takes(1 << 16, 4, np.float32)
    assert not ck.takes(1 << 17, 4, np.complex64) and ck.takes(1 << 17, 4, np.float32, True)
    assert not ck.takes(1 << 18, 4, np.float64, True)


# (name, input shape, complex input, kwargs); every one has power-of-two transform sizes
# and at least ck.MIN_ROWS rows per pass, so each goes through the C kernel (MIN_SIZE is
# lowered to 0 by `_calls`)
CASES = [
    ("rfft", (5, 3, 64), False, {}),
    ("rfft", (64, 6), False, {"dim": 0}),
    ("rfft", (7, 48), False, {"n": 32}),
    ("irfft", (7, 33), True, {}),
    ("irfft", (4, 9), True, {"n": 32}),
    ("irfft", (33, 6), True, {"dim": 0}),
    ("fft", (5, 128), True, {}),
    ("fft", (8, 32), False, {}),
    ("ifft", (3, 5, 16), True, {"dim": 1, "n": 4}),
    ("hfft", (6, 17), True, {}),
    ("ihfft", (6, 32), False, {}),
    ("rfft2", (5, 8, 16), False, {}),
    ("rfftn", (4, 8, 16), False, {}),
    ("irfftn", (4, 8, 9), True, {}),
    ("irfft2", (8, 5, 3), True, {"dim": (0, 1)}),
    ("fft2", (8, 16), True, {}),
    ("ifftn", (4, 6, 8), True, {"dim": (0, 2)}),
    ("hfftn", (4, 8, 5), True, {}),
    ("ihfftn", (4, 8, 8), False, {}),
]


def _calls(monkeypatch, small=True):
    """The kinds `ck.run` is called with; ``small``: small transforms take the kernel too
    (its MIN_SIZE is a speed threshold, not a limit)."""
    monkeypatch.setattr(ck, "FAST_LEVELS", ck.FAST_LEVELS + ("DEFAULT",))
    if small:
        monkeypatch.setattr(ck, "MIN_SIZE", 0)
    calls = []
    run = ck.run
    monkeypatch.setattr(ck, "run", lambda *a, **k: (calls.append(a[0]), run(*a, **k))[1])
    return calls


def _input(shape, cplx, dtype):
    a = RNG.standard_normal(shape)
    if cplx:
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(np.result_type(dtype, np.complex64) if cplx else dtype)


@needs_c
@pytest.mark.parametrize("norm", [None, "forward", "backward", "ortho"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name,shape,cplx,kw", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_transforms_through_the_kernel_match_torch(name, shape, cplx, kw, dtype, norm,
                                                    monkeypatch):
    calls = _calls(monkeypatch)
    a = _input(shape, cplx, dtype)
    got = getattr(ember.fft, name)(ember.from_numpy(a), norm=norm, **kw)
    assert calls, "the C FFT was not used"
    want = getattr(torch.fft, name)(torch.from_numpy(a), norm=norm, **kw)
    assert got.dtype == getattr(ember, str(want.dtype).split(".")[1])
    assert got.shape == tuple(want.shape)
    # accuracy against torch in double precision
    ref = getattr(torch.fft, name)(torch.from_numpy(a.astype(
        np.complex128 if cplx else np.float64)), norm=norm, **kw).resolve_conj().numpy()
    assert _rel_err(got._data, ref) <= TOL[dtype]


def test_non_power_of_two_few_rows_and_small_sizes_keep_scipy(monkeypatch):
    calls = _calls(monkeypatch, small=False)
    for a in (RNG.standard_normal((8, 12)), RNG.standard_normal((3, 16)),
              RNG.standard_normal((1, 4096)), RNG.standard_normal((8, 64)),
              RNG.standard_normal((4, 1 << 18))):
        got = ember.fft.rfft(ember.from_numpy(a))
        np.testing.assert_allclose(got._data, np.fft.rfft(a), atol=1e-12)
    assert calls == []


def test_disabled_kernel_falls_back_to_scipy(monkeypatch):
    calls = _calls(monkeypatch)
    monkeypatch.setattr(ck, "ENABLED", False)
    a = RNG.standard_normal((16, 64))
    np.testing.assert_allclose(ember.fft.rfft(ember.from_numpy(a))._data, np.fft.rfft(a),
                               atol=1e-12)
    assert calls == []


# 64 rows: 16-row blocks shared out; 8 and 20 rows: narrower blocks so that both threads
# have one
@needs_c
@pytest.mark.parametrize("shape", [(64, 4096), (8, 1 << 16), (20, 4096)])
def test_threads_do_not_change_values(shape, monkeypatch):
    calls = _calls(monkeypatch)
    a = RNG.standard_normal(shape).astype(np.float32)
    n = shape[1]
    prior = ember.get_num_threads()
    out = {}
    try:
        for t in (1, 2):
            ember.set_num_threads(t)
            out[t] = ember.fft.rfft(ember.from_numpy(a))._data
            out[t, "i"] = ember.fft.irfft(ember.from_numpy(out[t]), n=n)._data
    finally:
        ember.set_num_threads(prior)
    assert len(calls) == 4
    assert np.array_equal(out[1], out[2]) and np.array_equal(out[1, "i"], out[2, "i"])
    assert _rel_err(out[1], np.fft.rfft(a.astype(float))) <= TOL[np.float32]
    np.testing.assert_allclose(out[1, "i"], a, atol=2e-6 * np.abs(a).max())


GRAD_CASES = [
    ("rfft", (4, 8), False, {}),
    ("irfft", (4, 5), True, {}),
    ("fft", (4, 8), True, {}),
    ("ifft", (8, 4), True, {"dim": 0}),
    ("hfft", (4, 5), True, {}),
    ("ihfft", (4, 8), False, {}),
    ("rfft2", (4, 8), False, {}),
    ("irfftn", (4, 4, 3), True, {}),
]


@needs_c
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
@pytest.mark.parametrize("name,shape,cplx,kw", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_through_the_kernel(name, shape, cplx, kw, norm, monkeypatch):
    calls = _calls(monkeypatch)
    x = ember.from_numpy(_input(shape, cplx, np.float64)).requires_grad_()
    f = getattr(ember.fft, name)

    def fn(t):
        return f(t, norm=norm, **kw)
    assert ember.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-7)
    assert {ck.R2C, ck.C2R} & set(calls) or {ck.C2C_FWD, ck.C2C_INV} <= set(calls)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_backward_matches_torch(dtype):
    a = RNG.standard_normal((64, 256)).astype(dtype)
    x = ember.from_numpy(a).requires_grad_()
    ember.fft.rfft(x, norm="ortho").abs().sum().backward()
    t = torch.from_numpy(a).requires_grad_()
    torch.fft.rfft(t, norm="ortho").abs().sum().backward()
    assert x.grad.dtype == getattr(ember, np.dtype(dtype).name)
    np.testing.assert_allclose(x.grad._data, t.grad.numpy(), rtol=1e-4 if dtype == np.float32
                               else 1e-10, atol=1e-4 if dtype == np.float32 else 1e-10)


@needs_c
def test_default_level_keeps_scipy(monkeypatch):
    assert ck.available()
    monkeypatch.setitem(ck._LIB.info, "cpu_capability", "AVX2")
    assert ck.takes(4096, 64, np.float32)
    monkeypatch.setitem(ck._LIB.info, "cpu_capability", "DEFAULT")  # SSE2 only: no faster
    assert not ck.takes(4096, 64, np.float32)


@needs_c
def test_vmap_and_stft_through_the_kernel(monkeypatch):
    calls = _calls(monkeypatch)
    a = RNG.standard_normal((3, 8, 64))
    got = ember.func.vmap(lambda t: ember.fft.rfft(t, norm="ortho"))(ember.from_numpy(a))
    want = torch.func.vmap(lambda t: torch.fft.rfft(t, norm="ortho"))(torch.from_numpy(a))
    np.testing.assert_allclose(got._data, want.numpy(), atol=1e-12)
    assert calls
    calls.clear()
    s = RNG.standard_normal((2, 1000))
    win = np.hanning(64)
    got = ember.stft(ember.from_numpy(s), 64, hop_length=16, window=ember.from_numpy(win),
                     return_complex=True)
    want = torch.stft(torch.from_numpy(s), 64, hop_length=16, window=torch.from_numpy(win),
                      return_complex=True)
    np.testing.assert_allclose(got._data, want.numpy(), atol=1e-11)
    assert ck.R2C in calls
    back = ember.istft(got, 64, hop_length=16, window=ember.from_numpy(win), length=1000)
    np.testing.assert_allclose(back._data, s, atol=1e-11)


def test_byte_swapped_input_is_not_read_as_native():
    a = RNG.standard_normal((8, 4096))
    assert ck.run(ck.R2C, a.astype(">f8"), 4096) is None
    got = ember.fft.rfft(ember.from_numpy(a.astype(">f8").astype("<f8")))
    np.testing.assert_allclose(got._data, np.fft.rfft(a), atol=1e-10)
