"""cumsum in C with double accumulation (ops._cum_c), as torch's CPU kernel: bit for bit
against torch on every dim, float32/float64, reverse (the backward), non-contiguous and
small inputs, halves and integers on the NumPy path."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)


def _bits_equal(e, t):
    assert e.dtype == t.dtype and e.shape == t.shape
    assert np.array_equal(e.view(np.uint8), t.view(np.uint8))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((256, 1024), 1), ((256, 1024), 0), ((4, 5, 300), 1),
                                       ((3000,), 0), ((2, 3, 4, 50), -1), ((7, 3), 1)])
def test_cumsum_bits_match_torch(shape, dim, dt):
    x = (RNG.standard_normal(shape) * 100).astype(dt)
    _bits_equal(ember.from_numpy(x).cumsum(dim).numpy(), torch.from_numpy(x).cumsum(dim).numpy())
    xt = x.T
    _bits_equal(ember.from_numpy(xt).cumsum(0).numpy(), torch.from_numpy(xt).cumsum(0).numpy())


def test_cumsum_backward_and_other_dtypes():
    x = RNG.standard_normal((64, 100)).astype(np.float32)
    g = RNG.standard_normal((64, 100)).astype(np.float32)
    grads = []
    for lib in (torch, ember):
        a = lib.from_numpy(x).requires_grad_()
        a.cumsum(1).backward(lib.from_numpy(g))
        grads.append(a.grad.numpy())
    _bits_equal(grads[1], grads[0])
    for dt in ("float16", "bfloat16", "int32", "int64"):
        v = RNG.integers(-5, 5, (40, 30))
        e = ember.from_numpy(v).to(getattr(ember, dt)).cumsum(1)
        t = torch.from_numpy(v).to(getattr(torch, dt)).cumsum(1)
        assert str(e.dtype)[6:] == str(t.dtype)[6:]
        np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
    e = ember.from_numpy(x).cumsum(1, dtype=ember.float64).numpy()
    _bits_equal(e, torch.from_numpy(x).cumsum(1, dtype=torch.float64).numpy())


def test_without_the_library_numpy_serves(monkeypatch):
    from ember.ops import _cum_c
    monkeypatch.setattr(_cum_c, "_lib", None)
    monkeypatch.setattr(_cum_c, "_tried", True)
    x = RNG.standard_normal((8, 500)).astype(np.float32)
    assert _cum_c.cumsum(x, 1) is None
    np.testing.assert_allclose(ember.from_numpy(x).cumsum(1).numpy(),
                               torch.from_numpy(x).cumsum(1).numpy(), rtol=1e-5, atol=1e-5)
