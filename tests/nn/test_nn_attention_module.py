"""torch.nn.attention: SDPBackend, sdpa_kernel (flags set and restored, as torch's) and the
flash-attention implementation registry, each run with torch and ember."""
import logging
import warnings

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


def _sdpa_outcome(lib, backends, dropout_p=0.0, transpose_query=False):
    """What scaled_dot_product_attention does under ``sdpa_kernel(backends)``: the output or
    the error, and the warnings."""
    att = lib.nn.attention
    q = lib.arange(24.0).reshape(1, 2, 3, 4) / 24
    query = q.transpose(-1, -2).contiguous().transpose(-1, -2) if transpose_query else q
    with att.sdpa_kernel([getattr(att.SDPBackend, b) for b in backends]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = lib.nn.functional.scaled_dot_product_attention(query, q, q,
                                                                     dropout_p=dropout_p)
                result = ("ok", tuple(out.shape))
            except RuntimeError as e:
                result = ("RuntimeError", str(e))
    # torch's warnings end with the C++ location they were raised at
    return result, [str(w.message).split(" (Triggered internally")[0] for w in caught]


@pytest.mark.parametrize("backends,dropout_p,transpose_query", [
    (["EFFICIENT_ATTENTION"], 0.0, False), (["CUDNN_ATTENTION"], 0.5, False),
    (["EFFICIENT_ATTENTION", "CUDNN_ATTENTION"], 0.0, False), (["OVERRIDEABLE"], 0.0, False),
    ([], 0.0, False), (["FLASH_ATTENTION"], 0.0, False), (["FLASH_ATTENTION"], 0.5, False),
    (["FLASH_ATTENTION"], 0.0, True), (["MATH"], 0.5, True),
    (["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], 0.0, False)])
def test_sdpa_honours_backend_flags(backends, dropout_p, transpose_query):
    # the CPU has the math kernel and flash attention only: anything else finds no backend
    assert _sdpa_outcome(ember, backends, dropout_p, transpose_query) == \
        _sdpa_outcome(torch, backends, dropout_p, transpose_query)


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
