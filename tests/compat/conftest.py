"""Fixtures of the compat tests."""
import pytest


@pytest.fixture
def torch_typed_storage_warning_state():
    """torch warns about TypedStorage once per process: keep this test from using it up."""
    import torch.storage as ts
    saved = dict(ts._warn_typed_storage_removal.__dict__)
    yield
    ts._warn_typed_storage_removal.__dict__.clear()
    ts._warn_typed_storage_removal.__dict__.update(saved)
