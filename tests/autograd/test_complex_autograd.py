"""Complex tensors and autograd in PyTorch's conjugate-Wirtinger convention: gradients
of real losses of complex parameters against torch, gradcheck of holomorphic and
non-holomorphic functions, views (real/imag/view_as_real) sharing memory."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
Z = (RNG.uniform(0.3, 2, (3, 4)) + 1j * RNG.uniform(-2, 2, (3, 4)))
W = (RNG.uniform(0.3, 2, (3, 4)) + 1j * RNG.uniform(-2, 2, (3, 4)))
M = (RNG.standard_normal((4, 2)) + 1j * RNG.standard_normal((4, 2)))

# real-valued losses of complex inputs z, w (and a complex matrix m)
EXPRESSIONS = {
    "abs": lambda L, z, w, m: z.abs().sum(),
    "abs_sq": lambda L, z, w, m: (z * z.conj()).real.sum(),
    "real_of_square": lambda L, z, w, m: (z * z).real.sum(),
    "imag_of_product": lambda L, z, w, m: (z * w).imag.sum(),
    "angle": lambda L, z, w, m: z.angle().sum(),
    "sgn": lambda L, z, w, m: L.view_as_real(z.sgn() * w).sum(),
    "exp_log": lambda L, z, w, m: (z.exp() + w.log()).abs().sum(),
    "sqrt": lambda L, z, w, m: z.sqrt().real.sum() + z.sqrt().imag.pow(2).sum(),
    "pow_tensor": lambda L, z, w, m: (z ** (w * 0.3)).abs().sum(),
    "pow_scalar": lambda L, z, w, m: (z ** 3).real.sum() + (z ** 0.5).imag.sum(),
    "div": lambda L, z, w, m: (z / w).abs().pow(2).sum(),
    "matmul": lambda L, z, w, m: (z @ m).abs().sum(),
    "polar": lambda L, z, w, m: L.polar(z.abs(), w.angle()).real.sum(),
    "complex_ctor": lambda L, z, w, m: L.complex(z.real * 2, w.imag).abs().sum(),
    "view_as_real": lambda L, z, w, m: (L.view_as_real(z) ** 2).sum(),
    "view_as_complex": lambda L, z, w, m: L.view_as_complex(L.view_as_real(z) * 2).abs().sum(),
    "conj_physical": lambda L, z, w, m: (z.conj_physical() * w).real.sum(),
    "fft": lambda L, z, w, m: L.fft.fft(z * w).abs().sum(),
    "irfft": lambda L, z, w, m: L.fft.irfft(z, 7).pow(2).sum(),
    "sigmoid_tanh": lambda L, z, w, m: ((z * 0.2).sigmoid().abs().sum()
                                        + (w * 0.1).tanh().real.sum()),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_grads_of_real_losses_match_torch(name):
    f = EXPRESSIONS[name]
    tz, tw, tm = (torch.tensor(a, requires_grad=True) for a in (Z, W, M))
    ez, ew, em = (ember.tensor(a, requires_grad=True) for a in (Z, W, M))
    tg = torch.autograd.grad(f(torch, tz, tw, tm), (tz, tw, tm), allow_unused=True)
    eg = ember.autograd.grad(f(ember, ez, ew, em), (ez, ew, em), allow_unused=True)
    for e, t in zip(eg, tg):
        if t is None:
            assert e is None or not np.any(e._data)
            continue
        np.testing.assert_allclose(e._data, t.resolve_conj().numpy(), rtol=1e-10, atol=1e-12)


def test_abs_backward_is_z_over_abs():
    z = ember.tensor(Z, requires_grad=True)
    z.abs().sum().backward()
    np.testing.assert_allclose(z.grad._data, Z / np.abs(Z), rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda z: z * z + 2 * z,                 # holomorphic
    lambda z: z.exp() / (z + 3),             # holomorphic
    lambda z: z.log().sqrt(),                # holomorphic
    lambda z: z.conj() * z,                  # non-holomorphic
    lambda z: z.abs() + z.angle(),           # non-holomorphic, real output
    lambda z: z.sgn() * z.real,              # non-holomorphic
    lambda z: ember.fft.ifft(z.conj(), n=6),
], ids=["poly", "exp_div", "log_sqrt", "conj_mul", "abs_angle", "sgn_real", "ifft_conj"])
def test_gradcheck_complex(fn):
    z = ember.tensor(Z[:2, :3].copy(), requires_grad=True)
    assert ember.autograd.gradcheck(fn, (z,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_backward_on_complex_scalar_requires_gradient():
    z = ember.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (z * 2).sum().backward()
    tz = torch.tensor(Z, requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (tz * 2).sum().backward()
    # with gradient= it works, and matches torch
    (z * z).sum().backward(ember.tensor(1 + 2j))
    (tz * tz).sum().backward(torch.tensor(1 + 2j))
    np.testing.assert_allclose(z.grad._data, tz.grad.numpy(), rtol=1e-12)


def test_real_imag_are_writable_views():
    z = ember.tensor(Z.copy())
    z.real.mul_(2)
    z.imag.add_(1)
    np.testing.assert_allclose(z._data, Z.real * 2 + 1j * (Z.imag + 1))
    z.real = ember.zeros(3, 4, dtype=ember.float64)
    assert np.all(z._data.real == 0)
    assert z.real.dtype == ember.float64 and z.imag.dtype == ember.float64


def test_view_as_real_and_complex_share_memory():
    z = ember.tensor(Z.copy())
    r = ember.view_as_real(z)
    assert r.shape == (3, 4, 2)
    r[0, 0, 1] = 42.0
    assert z._data[0, 0].imag == 42.0
    c = ember.view_as_complex(r)
    c.mul_(2)
    assert r._data[0, 0, 1] == 84.0
    assert ember.view_as_real(ember.tensor(1 + 2j)).tolist() == [1.0, 2.0]
    nc = ember.tensor(Z.copy())[:, ::2]
    np.testing.assert_array_equal(ember.view_as_real(nc)._data[..., 1], Z[:, ::2].imag)


def test_view_as_complex_errors_match_torch():
    for bad in (np.ones((3, 3)), np.ones((3, 2), dtype=np.int64), np.ones((2, 4))[:, ::2]):
        with pytest.raises(RuntimeError):
            torch.view_as_complex(torch.from_numpy(bad))
        with pytest.raises(RuntimeError):
            ember.view_as_complex(ember.from_numpy(bad))


def test_conj_family():
    z = ember.tensor(Z)
    assert not z.is_conj() and not ember.is_conj(z)
    np.testing.assert_array_equal(z.conj()._data, np.conj(Z))
    np.testing.assert_array_equal(z.conj().resolve_conj()._data, np.conj(Z))
    np.testing.assert_array_equal(ember.conj_physical(z)._data, np.conj(Z))
    x = ember.tensor([1.0, 2.0])
    assert ember.conj(x) is x or np.array_equal(ember.conj(x)._data, x._data)


def test_creation_and_arithmetic_dtypes_match_torch():
    for e, t in ((ember.zeros(2, dtype=ember.complex64), torch.zeros(2, dtype=torch.complex64)),
                 (ember.tensor([1 + 1j]), torch.tensor([1 + 1j])),
                 (ember.ones(2) * 1j, torch.ones(2) * 1j),
                 (ember.ones(2, dtype=ember.float64) + ember.ones(2, dtype=ember.complex64),
                  torch.ones(2, dtype=torch.float64) + torch.ones(2, dtype=torch.complex64)),
                 (ember.complex(ember.ones(2), ember.ones(2)), torch.complex(torch.ones(2),
                                                                             torch.ones(2))),
                 (ember.polar(ember.tensor(Z.real), ember.tensor(Z.imag)),
                  torch.polar(torch.tensor(Z.real), torch.tensor(Z.imag))),
                 (ember.tensor(Z).abs(), torch.tensor(Z).abs()),
                 (ember.tensor(Z.astype(np.complex64)).angle(),
                  torch.tensor(Z.astype(np.complex64)).angle())):
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e._data, t.numpy(), rtol=1e-6)


def test_complex_matmul_values():
    a = ember.tensor(Z.astype(np.complex64))
    b = ember.tensor(M.astype(np.complex64))
    np.testing.assert_allclose((a @ b)._data, (torch.tensor(Z.astype(np.complex64)) @
                                                torch.tensor(M.astype(np.complex64))).numpy(),
                               rtol=1e-5)
