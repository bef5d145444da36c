"""``torch.backends.cuda``: CUDA matmul and attention flags (stored; ember's CPU kernels
always compute in full precision and its attention has one CPU implementation)."""
import types

__all__ = ["is_built", "matmul", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp", "preferred_linalg_library",
           "preferred_blas_library"]

matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                               allow_bf16_reduced_precision_reduction=True)
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}
_LIB = {"linalg": "default", "blas": "cublas"}


def is_built():
    """False: this ember was not built with CUDA (a CuPy backend registers at run time)."""
    return False


def _flag(kind):
    def enabled():
        return _SDP[kind]

    def enable(enabled):
        _SDP[kind] = bool(enabled)
    enabled.__name__ = f"{kind}_sdp_enabled"
    enable.__name__ = f"enable_{kind}_sdp"
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _flag("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _flag("mem_efficient")
math_sdp_enabled, enable_math_sdp = _flag("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _flag("cudnn")


def preferred_linalg_library(backend=None):
    if backend is not None:
        _LIB["linalg"] = str(backend)
    return _LIB["linalg"]


def preferred_blas_library(backend=None):
    if backend is not None:
        _LIB["blas"] = str(backend)
    return _LIB["blas"]
