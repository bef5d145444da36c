"""Sample frequencies and spectrum shifts: fftfreq, rfftfreq, fftshift, ifftshift."""
import numpy as np

from .._core import dtype as _dt
from .._core.device import DEFAULT_DEVICE
from .._core.dispatch import overridable, write_out
from .._core.tensor import wrap
from ..ops.shape import roll

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _freq(values, out, dtype, requires_grad, device=None):
    dt = dtype if dtype is not None else (out.dtype if out is not None else
                                          _dt.get_default_dtype())
    t = wrap(np.asarray(values).astype(dt.np))
    if device is not None or DEFAULT_DEVICE[0] is not None:  # computed on the host
        t = t.to(device if device is not None else DEFAULT_DEVICE[0])
    if out is not None:
        return write_out(out, t)
    if requires_grad:
        t.requires_grad_(True)
    return t


@overridable
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Computes the discrete Fourier Transform sample frequencies for a signal of size ``n``."""
    k = np.arange(n, dtype=np.float64)
    k[(n + 1) // 2:] -= n
    return _freq(k / (n * d), out, dtype, requires_grad, device)


@overridable
def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Computes the sample frequencies for ``rfft()`` with a signal of size ``n``."""
    return _freq(np.arange(n // 2 + 1, dtype=np.float64) / (n * d), out, dtype, requires_grad,
                 device)


def _shift(input, dim, sign):
    if dim is None:
        dim = tuple(range(input.dim()))
    elif isinstance(dim, int):
        dim = (dim,)
    if not dim:
        return input
    shifts = tuple(sign * (input.shape[d] // 2) for d in dim)
    return roll(input, shifts, tuple(dim))


@overridable
def fftshift(input, dim=None):
    """Reorders n-dimensional FFT data, as provided by ``fftn()``, to have negative frequency
    terms first."""
    return _shift(input, dim, 1)


@overridable
def ifftshift(input, dim=None):
    """Inverse of ``fftshift()``."""
    return _shift(input, dim, -1)
