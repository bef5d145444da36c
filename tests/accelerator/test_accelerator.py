"""ember.accelerator on a CPU-only machine behaves as torch.accelerator does."""
import pytest
import torch

import ember


def _outcome(fn):
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return ("ok", fn())
    except Exception as e:  # the exception type and text are what is compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("call", [
    lambda a: a.is_available(), lambda a: a.device_count(),
    lambda a: a.current_accelerator() is None, lambda a: a.current_accelerator(True),
    lambda a: a.current_device_index(), lambda a: a.current_device_idx(),
    lambda a: a.set_device_index(0), lambda a: a.synchronize(),
])
def test_cpu_only_matches_torch(call):
    assert _outcome(lambda: call(ember.accelerator)) == _outcome(lambda: call(torch.accelerator))


def test_device_index_context():
    with ember.accelerator.device_index(None), torch.accelerator.device_index(None):
        pass
    with pytest.raises(RuntimeError, match="none is available"):
        with ember.accelerator.device_index(0):
            pass
