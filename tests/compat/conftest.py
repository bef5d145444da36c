"""Fixtures of the compat tests."""
import contextlib

import numpy as np
import pytest


@pytest.fixture
def torch_typed_storage_warning_state():
    """torch warns about TypedStorage once per process: keep this test from using it up."""
    import torch.storage as ts
    saved = dict(ts._warn_typed_storage_removal.__dict__)
    yield
    ts._warn_typed_storage_removal.__dict__.clear()
    ts._warn_typed_storage_removal.__dict__.update(saved)


@contextlib.contextmanager
def registered_backend(name):
    """A third-party device ``name`` registered for the block, whose arrays are an ndarray
    subclass (ember's PrivateUse1-style backend API)."""
    import ember
    from ember._core import device as dev

    class FakeArray(np.ndarray):
        pass
    dev.register_backend(name, np, FakeArray, to_host=lambda a: np.asarray(a),
                         from_host=lambda a: np.asarray(a).view(FakeArray))
    try:
        yield name
    finally:
        ember.set_default_device(None)
        dev._BACKENDS.pop(name)
        dev._BY_TYPE.clear()
        dev.XP_BY_ARRAY_TYPE.pop(FakeArray)


@pytest.fixture
def fake_device():
    """A registered third-party device named "fakedev"."""
    with registered_backend("fakedev") as name:
        yield name


@pytest.fixture
def fake_xpu():
    """A third-party backend registered under torch's "xpu" device name."""
    with registered_backend("xpu") as name:
        yield name
