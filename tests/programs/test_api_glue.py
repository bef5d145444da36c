"""Top-level helpers real programs call (found by tests/programs), checked against torch."""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("increasing", [False, True])
@pytest.mark.parametrize("N", [None, 0, 1, 3, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_vander(N, increasing, dtype):
    a = np.array([1, 2, -3, 0.5]).astype(dtype)
    e = ember.vander(ember.from_numpy(a), N=N, increasing=increasing)
    t = torch.vander(torch.from_numpy(a), N=N, increasing=increasing)
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_vander_grad_and_errors():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    ember.vander(x, N=3).sum().backward()   # d/dx (x^2 + x + 1) = 2x + 1
    assert x.grad.tolist() == [3.0, 5.0, 7.0]
    with pytest.raises(RuntimeError):
        ember.vander(ember.ones(2, 2))


@pytest.mark.parametrize("kw", [{}, {"n": 2}, {"n": 0}, {"n": 7}, {"dim": 0}, {"dim": 0, "n": 3},
                                {"prepend": np.zeros((3, 1)), "append": np.ones((3, 2))}])
def test_diff(kw):
    a = np.random.default_rng(0).standard_normal((3, 5))
    conv = lambda lib: {k: lib.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    e = ember.diff(ember.from_numpy(a), **conv(ember))
    t = torch.diff(torch.from_numpy(a), **conv(torch))
    assert e.shape == tuple(t.shape)
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_diff_dtypes_method_and_grad():
    b = np.array([True, False, False, True])
    assert ember.from_numpy(b).diff().tolist() == torch.from_numpy(b).diff().tolist()
    i = np.array([1, 4, 9, 16])
    e, t = ember.from_numpy(i).diff(n=2), torch.from_numpy(i).diff(n=2)
    assert e.tolist() == t.tolist() and str(e.dtype) == "ember.int64"
    x = ember.tensor([1.0, 4.0, 9.0], requires_grad=True)
    x.diff().sum().backward()
    assert x.grad.tolist() == [-1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError):
        ember.diff(ember.tensor(1.0))


def test_reproducibility_flags_and_cpu_only_cuda_queries():
    ember.backends.cudnn.deterministic = True
    assert ember.backends.cudnn.deterministic and not ember.backends.mps.is_available()
    assert ember.cuda.is_available() is False   # no 'cuda' backend registered here
    assert ember.cuda.device_count() == 0
    ember.cuda.manual_seed_all(0)
    try:
        ember.use_deterministic_algorithms(True, warn_only=True)
        assert ember.are_deterministic_algorithms_enabled()
        assert ember.is_deterministic_algorithms_warn_only_enabled()
    finally:
        ember.use_deterministic_algorithms(False)
    assert not ember.are_deterministic_algorithms_enabled()
    ember.set_float32_matmul_precision("high")
    assert ember.get_float32_matmul_precision() == "high"
    ember.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError):
        ember.set_float32_matmul_precision("fast")
    assert ember.get_default_device() == ember.device("cpu")
    assert ember.is_anomaly_enabled() is False


def test_forward_ad_passes_through_integer_and_bool_outputs():
    # the Hessian of a product goes through prod's backward, which compares x == 0
    def f(lib, v):
        return (v ** 2).prod() + (v * (v > 0)).sum() + v[v.argmax()]

    v = np.array([0.5, -1.2, 2.0, 0.3])
    he = ember.func.hessian(lambda t: f(ember, t))(ember.from_numpy(v))
    ht = torch.autograd.functional.hessian(lambda t: f(torch, t), torch.from_numpy(v))
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-12)
    _, tan = ember.func.jvp(lambda t: t.argmax(), (ember.from_numpy(v),), (ember.ones(4, dtype=ember.float64),))
    assert tan is None or tan.dtype == ember.int64
