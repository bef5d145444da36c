"""The public transforms of ``ember.fft``: torch's signatures, ``out=`` and errors, over
the n-dimensional transforms of ember.ops.fft (which hold the argument resolution, the
dtype rules and the primitives)."""

from .._core.dispatch import overridable, write_out
from ..ops._helpers import type_name
from ..ops.fft.transforms import c2r_impl, fftn_impl, r2c_impl, wrap_dim

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]


def _out(r, out, name):
    if out is None:
        return r
    if r.dtype.is_complex and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got "
                           f"{type_name(out.dtype.np)}")
    return write_out(out, r)


# ---- complex-to-complex ------------------------------------------------------------------
def _one(input, n, dim):
    wrap_dim(dim, input.dim())
    return None if n is None else (n,), (dim,)


@overridable
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional discrete Fourier transform of ``input``."""
    s, d = _one(input, n, dim)
    return _out(fftn_impl("fft", input, s, d, norm, True), out, "fft")


@overridable
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional inverse discrete Fourier transform of ``input``."""
    s, d = _one(input, n, dim)
    return _out(fftn_impl("ifft", input, s, d, norm, False), out, "ifft")


@overridable
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2 dimensional discrete Fourier transform of ``input``."""
    return _out(fftn_impl("fft2", input, s, dim, norm, True), out, "fft2")


@overridable
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2 dimensional inverse discrete Fourier transform of ``input``."""
    return _out(fftn_impl("ifft2", input, s, dim, norm, False), out, "ifft2")


@overridable
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N dimensional discrete Fourier transform of ``input``."""
    return _out(fftn_impl("fftn", input, s, dim, norm, True), out, "fftn")


@overridable
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N dimensional inverse discrete Fourier transform of ``input``."""
    return _out(fftn_impl("ifftn", input, s, dim, norm, False), out, "ifftn")


# ---- real-to-complex (rfft, ihfft) -------------------------------------------------------
@overridable
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional Fourier transform of real-valued ``input``."""
    s, d = _one(input, n, dim)
    return _out(r2c_impl("rfft", input, s, d, norm, False), out, "rfft")


@overridable
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2-dimensional discrete Fourier transform of real ``input``."""
    return _out(r2c_impl("rfft2", input, s, dim, norm, False), out, "rfft2")


@overridable
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N-dimensional discrete Fourier transform of real ``input``."""
    return _out(r2c_impl("rfftn", input, s, dim, norm, False), out, "rfftn")


@overridable
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the inverse of ``hfft()``."""
    s, d = _one(input, n, dim)
    return _out(r2c_impl("ihfft", input, s, d, norm, True), out, "ihfft")


@overridable
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2-dimensional inverse discrete Fourier transform of real ``input``."""
    return _out(r2c_impl("ihfft2", input, s, dim, norm, True), out, "ihfft2")


@overridable
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N-dimensional inverse discrete Fourier transform of real ``input``."""
    return _out(r2c_impl("ihfftn", input, s, dim, norm, True), out, "ihfftn")


# ---- complex-to-real (irfft, hfft) -------------------------------------------------------
@overridable
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the inverse of ``rfft()``."""
    s, d = _one(input, n, dim)
    return _out(c2r_impl("irfft", input, s, d, norm, False), out, "irfft")


@overridable
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the inverse of ``rfft2()``."""
    return _out(c2r_impl("irfft2", input, s, dim, norm, False), out, "irfft2")


@overridable
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the inverse of ``rfftn()``."""
    return _out(c2r_impl("irfftn", input, s, dim, norm, False), out, "irfftn")


@overridable
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal."""
    s, d = _one(input, n, dim)
    return _out(c2r_impl("hfft", input, s, d, norm, True), out, "hfft")


@overridable
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2-dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal."""
    return _out(c2r_impl("hfft2", input, s, dim, norm, True), out, "hfft2")


@overridable
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the n-dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal."""
    return _out(c2r_impl("hfftn", input, s, dim, norm, True), out, "hfftn")


