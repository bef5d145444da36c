"""detect_anomaly's check_nan, against torch: NaN gradients raise only when it is on."""
import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that anomaly mode is slow
        yield


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_check_nan_false_lets_nan_gradients_through(lib):
    x = lib.tensor([0.0, 4.0], requires_grad=True)
    with lib.autograd.detect_anomaly(check_nan=False):
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        (lib.sqrt(x) * 0).sum().backward()
    g = x.grad.numpy()
    assert np.isnan(g[0]) and g[1] == 0.0
    with lib.autograd.set_detect_anomaly(True, check_nan=False):
        (g,) = lib.autograd.grad((lib.sqrt(x) * 0).sum(), x)
    assert np.isnan(g.numpy()[0])


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_check_nan_default_raises(lib):
    x = lib.tensor([0.0, 4.0], requires_grad=True)
    with lib.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            (lib.sqrt(x) * 0).sum().backward()
    assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
