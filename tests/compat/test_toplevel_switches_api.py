"""torch.set_default_tensor_type and the anomaly-mode switches, vs torch."""
import warnings

import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_set_default_tensor_type(lib):
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            lib.set_default_tensor_type(lib.DoubleTensor)
        assert lib.get_default_dtype() == lib.float64
        assert lib.tensor([1.5]).dtype == lib.float64 and lib.randn(1).dtype == lib.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.set_default_tensor_type("torch.FloatTensor")
            assert lib.get_default_dtype() == lib.float32
            for bad in (lib.LongTensor, lib.float64, 3, "torch.cuda.FloatTensor"):
                with pytest.raises(TypeError):
                    lib.set_default_tensor_type(bad)
            with pytest.raises(AttributeError):
                lib.set_default_tensor_type("torch.NoSuchTensor")
    finally:
        lib.set_default_dtype(lib.float32)


@LIBS
def test_anomaly_switches(lib):
    try:
        assert lib.is_anomaly_check_nan_enabled() is True
        lib.set_anomaly_enabled(True)
        assert lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(True, False)
        assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        lib.set_anomaly_enabled(False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly(check_nan=False):
                assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        assert not lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
    finally:
        lib.set_anomaly_enabled(False)
