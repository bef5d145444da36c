"""``torch.backends.openmp``: whether ember's operators run OpenMP-parallel kernels."""
__all__ = ["is_available"]


def is_available():
    """False: ember's eager kernels are NumPy's and its own single-threaded C loops."""
    return False
