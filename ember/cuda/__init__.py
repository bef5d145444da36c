"""``torch.cuda``: the queries device-agnostic scripts make.

A 'cuda' device exists when a backend named 'cuda' is registered (CuPy); without
one, ember answers as a CPU-only build of PyTorch: ``is_available()`` is False, seeding
and ``empty_cache`` are no-ops, and calls that need the device (``synchronize``,
``current_device``) raise its AssertionError.
"""
from .._core import device as _device

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all", "synchronize",
           "empty_cache", "current_device", "is_bf16_supported"]


def is_available():
    """True if a 'cuda' backend is registered."""
    return "cuda" in _device._BACKENDS


def device_count():
    return 1 if is_available() else 0


def _lazy_init():
    if not is_available():
        raise AssertionError("Torch not compiled with CUDA enabled")


def current_device():
    _lazy_init()
    return 0


def manual_seed(seed):
    """Seeds the CUDA generator; ember's generators are shared, so this is a no-op."""


manual_seed_all = manual_seed


def synchronize(device=None):
    """ember's kernels complete before returning; nothing to wait for."""
    _lazy_init()


def empty_cache():
    """No caching allocator to release."""


def is_bf16_supported(including_emulation=True):
    return is_available()


from . import amp  # noqa: E402,F401  (torch.cuda.amp)
