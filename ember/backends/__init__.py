"""``torch.backends``: flags PyTorch scripts set for reproducibility and speed.

ember runs on NumPy (and optionally a registered 'cuda' backend through CuPy), not on
cuDNN/MKL-DNN/MPS, so these flags are accepted and stored for scripts that set or
read them, but change nothing: ember's CPU kernels are already deterministic.
"""
import types

__all__ = ["cudnn", "cuda", "mps", "mkldnn", "opt_einsum"]

cudnn = types.SimpleNamespace(enabled=True, deterministic=False, benchmark=False,
                              allow_tf32=True, is_available=lambda: False,
                              version=lambda: None)
cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False,
                                                          allow_fp16_reduced_precision_reduction=True,
                                                          allow_bf16_reduced_precision_reduction=True),
                             is_built=lambda: False)
mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
mkldnn = types.SimpleNamespace(enabled=True, is_available=lambda: False)
opt_einsum = types.SimpleNamespace(enabled=True, strategy="auto", is_available=lambda: False)
