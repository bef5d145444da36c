"""ember.fft beyond the op database: complex128 gradcheck and double backward of every
transform, out= rules, the threaded path for large inputs, dim=() and error messages."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 6))
Z = RNG.standard_normal((3, 5)) + 1j * RNG.standard_normal((3, 5))
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftn", "ifftn", "rfftn",
       "irfftn", "hfftn", "ihfftn"]
REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


@pytest.mark.parametrize("name", ONE_D + N_D)
def test_gradcheck_and_gradgradcheck(name):
    a = X if name in REAL_IN else Z
    kw = {"n": 7} if name in ONE_D else {"s": (2, 7)}
    x = ember.tensor(a, requires_grad=True)
    f = getattr(ember.fft, name)

    def fn(t):
        return f(t, norm="ortho", **kw)
    assert ember.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-6)
    assert ember.autograd.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5)


def test_out_rules_match_torch():
    x = ember.tensor(X)
    out = ember.empty(0, dtype=ember.complex128)
    assert ember.fft.rfft(x, out=out) is out
    np.testing.assert_allclose(out._data, np.fft.rfft(X))
    with pytest.raises(RuntimeError, match="complex output"):
        ember.fft.fft(x, out=ember.empty(0, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="complex output"):
        torch.fft.fft(torch.tensor(X), out=torch.empty(0, dtype=torch.float64))


def test_large_transform_uses_threads_and_stays_single_precision():
    a = RNG.standard_normal((64, 4096)).astype(np.float32)
    r = ember.fft.rfft(ember.from_numpy(a))
    assert r.dtype == ember.complex64
    np.testing.assert_allclose(r._data, torch.fft.rfft(torch.from_numpy(a)).numpy(), rtol=1e-3,
                               atol=2e-3)


_THREADED_CALLS = [
    ("rfft", lambda L, x: L.fft.rfft(x)),
    ("irfft", lambda L, x: L.fft.irfft(x)),
    ("fft", lambda L, x: L.fft.fft(x, norm="ortho")),
    ("ifft2", lambda L, x: L.fft.ifft2(x)),
    ("rfftn", lambda L, x: L.fft.rfftn(x, dim=(0, 1))),
]


@pytest.mark.parametrize("name,call", _THREADED_CALLS, ids=[c[0] for c in _THREADED_CALLS])
def test_threads_follow_set_num_threads_and_values_do_not_change(name, call, monkeypatch):
    import scipy.fft
    # 2000 points: not a power of two, so scipy transforms it (ember's C FFT takes those;
    # its threads are tested in test_fft_kernel.py)
    a = RNG.standard_normal((64, 2000)).astype(np.float32)
    workers = []
    for f in ("fft", "ifft", "rfft", "irfft", "fftn", "ifftn", "rfftn", "irfftn"):
        real = getattr(scipy.fft, f)
        monkeypatch.setattr(scipy.fft, f, lambda *args, _real=real, **kw: (
            workers.append(kw.get("workers")), _real(*args, **kw))[1])
    prior = ember.get_num_threads()
    out = {}
    try:
        for n in (1, 2):
            ember.set_num_threads(n)
            workers.clear()
            out[n] = call(ember, ember.from_numpy(a))._data
            assert workers and set(workers) == {n}
        small = ember.from_numpy(a[:4, :60])  # too little work to share out
        workers.clear()
        call(ember, small)
        assert set(workers) == {1}
    finally:
        ember.set_num_threads(prior)
    assert out[1].dtype == out[2].dtype and np.array_equal(out[1], out[2])
    expect = call(torch, torch.from_numpy(a)).numpy()
    np.testing.assert_allclose(out[2], expect, rtol=1e-3, atol=2e-3 * np.abs(expect).max())


@pytest.mark.parametrize("call,exc,msg", [
    (lambda L, x: L.fft.fft(x, norm="bad"), RuntimeError, "Invalid normalization mode"),
    (lambda L, x: L.fft.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda L, x: L.fft.fftn(x, dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
    (lambda L, x: L.fft.rfft(x * 1j), RuntimeError, "rfft expects a real input tensor"),
    (lambda L, x: L.fft.ihfft(x * 1j), RuntimeError, "ihfft expects a real input tensor"),
    (lambda L, x: L.fft.fftn(x, s=(3,), dim=(0, 1)), RuntimeError, "same length"),
    (lambda L, x: L.fft.fftn(x, s=(1, 2, 3)), RuntimeError, "Got shape with 3 values"),
    (lambda L, x: L.fft.rfftn(x, dim=()), RuntimeError, "at least one axis"),
    (lambda L, x: L.fft.fft(x.half()), RuntimeError, "Unsupported dtype Half"),
    (lambda L, x: L.fft.fft(x[0, 0]), IndexError, "no dimensions"),
])
def test_errors_match_torch(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(torch, torch.tensor(X))
    with pytest.raises(exc, match=msg):
        call(ember, ember.tensor(X))


def test_empty_dim_tuple_and_0d():
    t = torch.fft.fftn(torch.tensor(X), dim=())
    e = ember.fft.fftn(ember.tensor(X), dim=())
    assert e.dtype == ember.complex128 and t.dtype == torch.complex128
    np.testing.assert_array_equal(e._data, t.numpy())
    assert ember.fft.fftn(ember.tensor(2.0)).item() == torch.fft.fftn(torch.tensor(2.0)).item()


def test_integer_input_uses_default_dtype():
    x = np.arange(8)
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.fft.rfft(ember.tensor(x)).dtype == ember.complex128
        assert ember.fft.fftfreq(4).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.fft.fft(ember.tensor(x)).dtype == ember.complex64
    assert ember.fft.irfft(ember.tensor(x)).dtype == ember.float32


def test_fftfreq_options():
    np.testing.assert_allclose(ember.fft.fftfreq(5, 0.1)._data, torch.fft.fftfreq(5, 0.1).numpy())
    f = ember.fft.rfftfreq(6, requires_grad=True)
    assert f.requires_grad and f.shape == (4,)
    out = ember.empty(0, dtype=ember.float64)
    ember.fft.fftfreq(4, out=out)
    np.testing.assert_allclose(out._data, [0, 0.25, -0.5, -0.25])


def test_shift_roundtrip_and_grad():
    x = ember.tensor(X, requires_grad=True)
    y = ember.fft.ifftshift(ember.fft.fftshift(x, dim=(0, 1)), dim=(0, 1))
    np.testing.assert_array_equal(y._data, X)
    (ember.fft.fftshift(x) * ember.tensor(X)).sum().backward()
    np.testing.assert_allclose(x.grad._data, np.fft.ifftshift(X))
