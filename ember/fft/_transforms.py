"""The public transforms of ``ember.fft``: argument handling (n/s, dim, norm, out=)
and torch's dtype rules, over the primitives in ``_ops``.

dtypes follow torch, not NumPy: float32 stays single precision (complex64
spectra), integer and bool inputs compute in the default float dtype, and
float16/bfloat16 are rejected ("Unsupported dtype Half") as torch does on CPU.
"""

from .._core import dtype as _dt
from .._core.dispatch import overridable, write_out
from ..ops._helpers import default_float_np, type_name
from ._ops import c2c, c2r, r2c, resize

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn"]

_HALF_NAMES = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def _scale(norm, forward):
    if norm is None or norm == "backward":
        return "none" if forward else "n"
    if norm == "forward":
        return "n" if forward else "none"
    if norm == "ortho":
        return "sqrt"
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _as_float(x, name, real_only=False):
    """The input in the dtype the transform computes in (torch's promotion rules)."""
    dt = x._data.dtype
    if dt.name in _HALF_NAMES:
        raise RuntimeError(f"Unsupported dtype {type_name(dt)}")
    if real_only and dt.kind == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {type_name(dt)}")
    if dt.kind in "biu":
        return x.to(_dt.FROM_NP[default_float_np()])
    return x


def _wrap1(dim, ndim):
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    return dim % ndim


def _check_n(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _dims_and_sizes(x, s, dim, c2r_last=False):
    """Resolve torch's (s, dim) pair to wrapped unique dims and explicit sizes (None where
    -1/unspecified: the input's size, or for a c2r last dim the default 2*(m-1))."""
    ndim = x._data.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None:
        s = tuple(int(v) for v in s)
        if dim is None:
            if len(s) > ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                                   f"{ndim} dimensions.")
            dim = tuple(range(ndim - len(s), ndim))
        elif len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif dim is None:
        dim = tuple(range(ndim))
    dims = tuple(_wrap1(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    sizes = []
    for i, d in enumerate(dims):
        v = None if s is None or s[i] == -1 else s[i]
        if v is None:
            v = 2 * (x.shape[d] - 1) if c2r_last and i == len(dims) - 1 else x.shape[d]
        _check_n(v)
        sizes.append(v)
    return dims, sizes


def _out(r, out, name):
    if out is None:
        return r
    if r._data.dtype.kind == "c" and out._data.dtype.kind != "c":
        raise RuntimeError(f"{name} expects a complex output tensor, but got "
                           f"{type_name(out._data.dtype)}")
    return write_out(out, r)


# ---- complex-to-complex ------------------------------------------------------------------
def _fftn_impl(name, input, s, dim, norm, forward):
    x = _as_float(input, name)
    dims, sizes = _dims_and_sizes(x, s, dim)
    x = resize(x, dims, sizes)
    return c2c(x, dims, _scale(norm, forward), forward)


def _one(input, n, dim):
    _wrap1(dim, input._data.ndim)
    return None if n is None else (n,), (dim,)


@overridable
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional discrete Fourier transform of ``input``."""
    s, d = _one(input, n, dim)
    return _out(_fftn_impl("fft", input, s, d, norm, True), out, "fft")


@overridable
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional inverse discrete Fourier transform of ``input``."""
    s, d = _one(input, n, dim)
    return _out(_fftn_impl("ifft", input, s, d, norm, False), out, "ifft")


@overridable
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2 dimensional discrete Fourier transform of ``input``."""
    return _out(_fftn_impl("fft2", input, s, dim, norm, True), out, "fft2")


@overridable
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2 dimensional inverse discrete Fourier transform of ``input``."""
    return _out(_fftn_impl("ifft2", input, s, dim, norm, False), out, "ifft2")


@overridable
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N dimensional discrete Fourier transform of ``input``."""
    return _out(_fftn_impl("fftn", input, s, dim, norm, True), out, "fftn")


@overridable
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N dimensional inverse discrete Fourier transform of ``input``."""
    return _out(_fftn_impl("ifftn", input, s, dim, norm, False), out, "ifftn")


# ---- real-to-complex (rfft, ihfft) -------------------------------------------------------
def _r2c_impl(name, input, s, dim, norm, inverse):
    x = _as_float(input, name, real_only=True)
    dims, sizes = _dims_and_sizes(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = resize(x, dims, sizes)
    if not inverse:
        return r2c(x, dims, _scale(norm, True), sizes[-1])
    # ihfft of real x is the conjugate of its one-sided forward transform, scaled as an inverse
    return r2c(x, dims, _scale(norm, False), sizes[-1]).conj()


@overridable
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional Fourier transform of real-valued ``input``."""
    s, d = _one(input, n, dim)
    return _out(_r2c_impl("rfft", input, s, d, norm, False), out, "rfft")


@overridable
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2-dimensional discrete Fourier transform of real ``input``."""
    return _out(_r2c_impl("rfft2", input, s, dim, norm, False), out, "rfft2")


@overridable
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N-dimensional discrete Fourier transform of real ``input``."""
    return _out(_r2c_impl("rfftn", input, s, dim, norm, False), out, "rfftn")


@overridable
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the inverse of ``hfft()``."""
    s, d = _one(input, n, dim)
    return _out(_r2c_impl("ihfft", input, s, d, norm, True), out, "ihfft")


@overridable
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2-dimensional inverse discrete Fourier transform of real ``input``."""
    return _out(_r2c_impl("ihfft2", input, s, dim, norm, True), out, "ihfft2")


@overridable
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the N-dimensional inverse discrete Fourier transform of real ``input``."""
    return _out(_r2c_impl("ihfftn", input, s, dim, norm, True), out, "ihfftn")


# ---- complex-to-real (irfft, hfft) -------------------------------------------------------
def _c2r_impl(name, input, s, dim, norm, hermitian_fwd):
    x = _as_float(input, name)
    dims, sizes = _dims_and_sizes(x, s, dim, c2r_last=True)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    last_n = sizes[-1]
    x = resize(x, dims, sizes[:-1] + [last_n // 2 + 1])
    if not hermitian_fwd:
        return c2r(x, dims, _scale(norm, False), last_n)
    # hfft: the forward transform of a Hermitian signal is the unscaled inverse real
    # transform of its conjugate
    return c2r(x.conj(), dims, _scale(norm, True), last_n)


@overridable
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the inverse of ``rfft()``."""
    s, d = _one(input, n, dim)
    return _out(_c2r_impl("irfft", input, s, d, norm, False), out, "irfft")


@overridable
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the inverse of ``rfft2()``."""
    return _out(_c2r_impl("irfft2", input, s, dim, norm, False), out, "irfft2")


@overridable
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the inverse of ``rfftn()``."""
    return _out(_c2r_impl("irfftn", input, s, dim, norm, False), out, "irfftn")


@overridable
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Computes the one dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal."""
    s, d = _one(input, n, dim)
    return _out(_c2r_impl("hfft", input, s, d, norm, True), out, "hfft")


@overridable
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """Computes the 2-dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal."""
    return _out(_c2r_impl("hfft2", input, s, dim, norm, True), out, "hfft2")


@overridable
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Computes the n-dimensional discrete Fourier transform of a Hermitian symmetric
    ``input`` signal."""
    return _out(_c2r_impl("hfftn", input, s, dim, norm, True), out, "hfftn")


