"""``torch.version``: the version fields libraries check.

``__version__`` is the torch release whose API ember follows, with the local tag
``+ember`` (``2.13.0+ember``), so ``packaging.version`` comparisons against torch
releases behave as they would for that torch; ``cuda``/``hip`` are None (no GPU build).
"""
__all__ = ["__version__", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

__version__ = "2.13.0+ember"
ember_version = "0.1.0"
debug = False
cuda = None
hip = None
rocm = None
xpu = None
git_version = "unknown"
