"""tril/triu as an AND with a cached bit mask (ops.shape._tri_kernel): bit for bit against
torch over dtypes (NaN, -0.0 and bool included), diagonals, batches, empty and
non-contiguous inputs, in place and with gradients."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.float64, np.int64, np.bool_, np.int8, np.float16, np.complex64,
          np.complex128]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(5, 7), (7, 5), (3, 4, 6), (1, 1), (0, 3), (2, 0, 4)])
def test_bits_match_torch(shape, dt):
    x = RNG.random(shape) > 0.5 if dt == np.bool_ else (RNG.standard_normal(shape) * 3).astype(dt)
    if x.size and dt in (np.float32, np.float64):
        x.flat[0], x.flat[-1] = np.nan, -0.0
    for k in (-10, -2, -1, 0, 1, 3, 10):
        for name in ("tril", "triu"):
            e = getattr(ember.from_numpy(x), name)(k).numpy()
            t = getattr(torch.from_numpy(x), name)(k).numpy()
            assert e.dtype == t.dtype and e.shape == t.shape
            assert np.array_equal(e.view(np.uint8), t.view(np.uint8))


def test_inplace_noncontiguous_and_grad():
    x = RNG.standard_normal((6, 8)).astype(np.float32)
    for name in ("tril", "triu"):
        t, e = torch.from_numpy(x.copy()), ember.from_numpy(x.copy())
        getattr(t, name + "_")(1)
        getattr(e, name + "_")(1)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
        np.testing.assert_array_equal(getattr(ember.from_numpy(x).t(), name)(-1).numpy(),
                                      getattr(torch.from_numpy(x).t(), name)(-1).numpy())
        grads = []
        for lib in (torch, ember):
            a = lib.from_numpy(x).requires_grad_()
            getattr(a, name)().sum().backward()
            grads.append(a.grad.numpy())
        np.testing.assert_array_equal(grads[1], grads[0])
    causal = ember.tril(ember.ones(5, 5))
    assert causal.numpy().sum() == 15 and ember.ones(5, 5).numpy().sum() == 25  # cache untouched
