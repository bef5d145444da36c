"""``utils.deterministic.fill_uninitialized_memory`` with ``use_deterministic_algorithms``:
uninitialised memory filled as torch fills it (NaN, the integer maximum, True), vs torch."""
import importlib

import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
          "uint8", "bool", "complex64", "complex128"]


def _switch(lib):
    return importlib.import_module(lib.__name__ + ".utils.deterministic")


@pytest.fixture
def deterministic():
    """Deterministic algorithms on for the test; both libraries' switches restored after."""
    saved = [(lib, lib.are_deterministic_algorithms_enabled(),
              lib.is_deterministic_algorithms_warn_only_enabled(),
              _switch(lib).fill_uninitialized_memory) for lib in (torch, ember)]
    for lib in (torch, ember):
        lib.use_deterministic_algorithms(True)
    yield
    for lib, mode, warn_only, fill in saved:
        lib.use_deterministic_algorithms(mode, warn_only=warn_only)
        _switch(lib).fill_uninitialized_memory = fill


def _values(t):
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.tolist())


def _factories(lib, dtype):
    dt = getattr(lib, dtype)
    resized = lib.zeros(2, dtype=dt)
    resized.resize_(5)
    return {"empty": lib.empty(2, 3, dtype=dt),
            "empty_like": lib.empty_like(lib.zeros(3, dtype=dt)),
            "new_empty": lib.zeros(1, dtype=dt).new_empty(4),
            "empty_strided": lib.empty_strided((2, 2), (1, 2), dtype=dt),
            "empty_permuted": lib.empty_permuted((2, 3), (1, 0), dtype=dt),
            "resize_": resized}


@pytest.mark.parametrize("dtype", DTYPES)
def test_uninitialized_memory_filled_as_torch(deterministic, dtype):
    expect = _factories(torch, dtype)
    for name, got in _factories(ember, dtype).items():
        np.testing.assert_array_equal(_values(got), _values(expect[name]), err_msg=name)


def test_switch_off_leaves_memory_alone(deterministic):
    for lib in (torch, ember):
        _switch(lib).fill_uninitialized_memory = False
    t = ember.ones(2)
    t.resize_(2, 1)  # no new memory: the values stay
    assert t.tolist() == [[1.0], [1.0]]
    ember.use_deterministic_algorithms(False)
    _switch(ember).fill_uninitialized_memory = True
    assert ember.zeros(3).resize_(4)[:3].tolist() == [0.0, 0.0, 0.0]


@LIBS
def test_switch_is_a_checked_bool(lib):
    d = _switch(lib)
    assert d.fill_uninitialized_memory is True
    for bad in (1, None, "yes"):
        with pytest.raises(RuntimeError, match=f"expected a bool, but got {type(bad).__name__}"):
            d.fill_uninitialized_memory = bad
    assert d.fill_uninitialized_memory is True
