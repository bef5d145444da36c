"""ember.fft: discrete Fourier transforms with torch's API, dtypes and gradients."""
from .._core.tensor import Tensor  # noqa: F401  (torch.fft.Tensor, which annotations name)
from ._helpers import fftfreq, fftshift, ifftshift, rfftfreq  # noqa: F401
from ._transforms import (fft, fft2, fftn, hfft, hfft2, hfftn, ifft, ifft2, ifftn,  # noqa: F401
                          ihfft, ihfft2, ihfftn, irfft, irfft2, irfftn, rfft, rfft2, rfftn)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift", "Tensor"]
