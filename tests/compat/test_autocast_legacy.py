"""torch's per-device autocast switches and cache/nesting controls (ember.amp.legacy),
against torch."""
import pytest
import torch

import ember

# torch deprecates the per-device forms (checked once below)
pytestmark = pytest.mark.filterwarnings("ignore:torch.*is deprecated:DeprecationWarning")
LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _name(dt):
    return str(dt).split(".")[1]


@LIBS
def test_defaults(lib):
    assert [_name(f()) for f in (lib.get_autocast_cpu_dtype, lib.get_autocast_gpu_dtype,
                                 lib.get_autocast_ipu_dtype, lib.get_autocast_xla_dtype)] == \
        ["bfloat16", "float16", "float16", "bfloat16"]
    assert not lib.is_autocast_cpu_enabled() and not lib.is_autocast_ipu_enabled()
    assert not lib.is_autocast_xla_enabled() and lib.is_autocast_cache_enabled()


@LIBS
def test_setters_round_trip_and_reach_autocast_state(lib):
    try:
        lib.set_autocast_cpu_dtype(lib.float16)
        assert lib.get_autocast_dtype("cpu") == lib.float16
        lib.set_autocast_gpu_dtype(lib.bfloat16)
        assert lib.get_autocast_dtype("cuda") == lib.bfloat16
        lib.set_autocast_cpu_enabled(True)
        assert lib.is_autocast_enabled("cpu") and lib.is_autocast_cpu_enabled()
        x = lib.ones(2, 2)
        assert (x @ x).dtype == lib.float16  # the switch really enables autocast
        for dev in ("ipu", "xla"):
            getattr(lib, f"set_autocast_{dev}_enabled")(True)
            assert getattr(lib, f"is_autocast_{dev}_enabled")()
            getattr(lib, f"set_autocast_{dev}_dtype")(lib.float32)
            assert getattr(lib, f"get_autocast_{dev}_dtype")() == lib.float32
    finally:
        lib.set_autocast_cpu_enabled(False)
        lib.set_autocast_cpu_dtype(lib.bfloat16)
        lib.set_autocast_gpu_dtype(lib.float16)
        lib.set_autocast_ipu_enabled(False)
        lib.set_autocast_xla_enabled(False)
        lib.set_autocast_ipu_dtype(lib.float16)
        lib.set_autocast_xla_dtype(lib.bfloat16)
    assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype == lib.float32


@LIBS
def test_cache_flag_follows_regions(lib):
    with lib.autocast("cpu", cache_enabled=False):
        assert not lib.is_autocast_cache_enabled()
    assert lib.is_autocast_cache_enabled()
    lib.set_autocast_cache_enabled(False)
    try:
        assert lib.autocast("cpu")._cache_enabled is False  # a region's default
    finally:
        lib.set_autocast_cache_enabled(True)
    assert lib.clear_autocast_cache() is None


@LIBS
def test_nesting_counter(lib):
    assert lib.autocast_increment_nesting() == 1
    assert lib.autocast_increment_nesting() == 2
    assert lib.autocast_decrement_nesting() == 1
    assert lib.autocast_decrement_nesting() == 0


@LIBS
def test_argument_errors(lib):
    with pytest.raises(TypeError, match=r"enabled must be a bool \(got str\)"):
        lib.set_autocast_cpu_enabled("yes")
    with pytest.raises(TypeError, match=r"enabled must be a bool \(got int\)"):
        lib.set_autocast_cache_enabled(1)
    with pytest.raises(TypeError, match=r"dtype must be a torch.dtype \(got str\)"):
        lib.set_autocast_cpu_dtype("x")


@pytest.mark.filterwarnings("error")
@LIBS
def test_per_device_forms_warn_their_replacement(lib):
    with pytest.warns(DeprecationWarning, match=r"torch.get_autocast_cpu_dtype\(\) is "
                                                r"deprecated. Please use "
                                                r"torch.get_autocast_dtype\('cpu'\) instead."):
        lib.get_autocast_cpu_dtype()
    with pytest.warns(DeprecationWarning, match=r"torch.set_autocast_gpu_dtype\(dtype\) is "
                                                r"deprecated. Please use torch.set_autocast_"
                                                r"dtype\('cuda', dtype\) instead."):
        lib.set_autocast_gpu_dtype(lib.float16)
    assert lib.is_autocast_cache_enabled()  # not deprecated: no warning (errors here)
