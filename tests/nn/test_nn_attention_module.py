"""torch.nn.attention: SDPBackend, sdpa_kernel (flags set and restored, as torch's) and the
flash-attention implementation registry, each run with torch and ember."""
import logging

import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _flags(lib):
    c = lib.backends.cuda
    return (c.flash_sdp_enabled(), c.mem_efficient_sdp_enabled(), c.math_sdp_enabled(),
            c.cudnn_sdp_enabled())


@LIBS
def test_backend_enum(lib):
    B = lib.nn.attention.SDPBackend
    assert [(m, int(getattr(B, m))) for m in ("ERROR", "MATH", "FLASH_ATTENTION",
                                             "EFFICIENT_ATTENTION", "CUDNN_ATTENTION",
                                             "OVERRIDEABLE")] == \
        [("ERROR", -1), ("MATH", 0), ("FLASH_ATTENTION", 1), ("EFFICIENT_ATTENTION", 2),
         ("CUDNN_ATTENTION", 3), ("OVERRIDEABLE", 4)]
    assert str(B.MATH) == "SDPBackend.MATH" and B.MATH.name == "MATH"


@LIBS
def test_sdpa_kernel_sets_and_restores_flags(lib):
    att = lib.nn.attention
    before = _flags(lib)
    with att.sdpa_kernel(att.SDPBackend.MATH):
        assert _flags(lib) == (False, False, True, False)
    assert _flags(lib) == before
    with att.sdpa_kernel([att.SDPBackend.FLASH_ATTENTION, att.SDPBackend.MATH,
                          att.SDPBackend.MATH], set_priority=True) as r:
        assert r == {} and _flags(lib) == (True, False, True, False)
        q = lib.ones(1, 2, 3, 4)
        out = lib.nn.functional.scaled_dot_product_attention(q, q, q)
        assert out.shape == (1, 2, 3, 4) and out.tolist() == q.tolist()
    assert _flags(lib) == before
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
        with att.sdpa_kernel("math"):
            pass
    assert att.WARN_FOR_UNFUSED_KERNELS is False


@LIBS
def test_flash_impl_registry(lib, caplog):
    att = lib.nn.attention
    handles = []

    class Handle:
        def remove(self):
            handles.append("removed")
    att.register_flash_attention_impl("TestImpl", register_fn=Handle)
    assert "TestImpl" in att.list_flash_attention_impls()
    assert att.current_flash_attention_impl() is None
    att.activate_flash_attention_impl("TestImpl")
    assert att.current_flash_attention_impl() == "TestImpl"
    att.restore_flash_attention_impl()
    assert handles == ["removed"] and att.current_flash_attention_impl() is None
    with caplog.at_level(logging.WARNING):
        att.restore_flash_attention_impl()
    assert "no custom impl was activated" in caplog.text
    with pytest.raises(ValueError, match="Unknown flash attention impl 'Nope'"):
        att.activate_flash_attention_impl("Nope")
