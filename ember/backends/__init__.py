"""``torch.backends``: flags PyTorch scripts set for reproducibility and speed.

ember runs on NumPy (and optionally a registered 'cuda' backend through CuPy), not on
cuDNN/MKL-DNN/MPS, so these flags are accepted and stored for scripts that set or
read them, but change nothing: ember's CPU kernels are already deterministic.  Each
is a real module, so ``import torch.backends.cudnn`` works as in torch.
"""
from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
