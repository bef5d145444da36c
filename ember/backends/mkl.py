"""``torch.backends.mkl``: ember's BLAS is the one NumPy ships, not MKL."""
__all__ = ["is_available", "VERBOSE_OFF", "VERBOSE_ON", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available():
    return False


class verbose:
    """On-demand MKL verbose output (a no-op context manager: no MKL here)."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
