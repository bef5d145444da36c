"""The n-dimensional transforms over the FFT primitives: torch's (s, dim, norm) arguments
resolved to wrapped dims, explicit sizes and a static scale, torch's dtype rules (float32
stays single precision, integer and bool inputs compute in the default float dtype,
float16/bfloat16 are rejected as torch does on CPU), zero-padding or trimming to the sizes,
then one primitive.  ``ember.fft``'s public functions and ``stft``/``istft`` call these.
"""
from ..._core import dtype as _dt
from .._helpers import default_float_np, type_name
from .primitives import c2c, c2r, r2c, resize

__all__ = ["fftn_impl", "r2c_impl", "c2r_impl", "wrap_dim"]

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
    dt = x.dtype.np
    # only a dtype outside float32/64, complex64/128 can be a half or an integer (dtype.name
    # costs a microsecond)
    if (dt.kind not in "fc" or dt.itemsize < 4) and dt.name in _HALF_NAMES:
        raise RuntimeError(f"Unsupported dtype {type_name(dt)}")
    if real_only and dt.kind == "c":
        raise RuntimeError(f"{name} expects a real input tensor, but got {type_name(dt)}")
    if dt.kind in "biu":
        return x.to(_dt.FROM_NP[default_float_np()])
    return x


def wrap_dim(dim, ndim):
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
    ndim = x.ndim
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
    dims = tuple(wrap_dim(d, ndim) for d in dim)
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


# ---- complex-to-complex ------------------------------------------------------------------
def fftn_impl(name, input, s, dim, norm, forward):
    x = _as_float(input, name)
    dims, sizes = _dims_and_sizes(x, s, dim)
    x = resize(x, dims, sizes)
    return c2c(x, dims, _scale(norm, forward), forward)


# ---- real-to-complex (rfft, ihfft) -------------------------------------------------------
def r2c_impl(name, input, s, dim, norm, inverse):
    x = _as_float(input, name, real_only=True)
    dims, sizes = _dims_and_sizes(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    x = resize(x, dims, sizes)
    if not inverse:
        return r2c(x, dims, _scale(norm, True), sizes[-1])
    # ihfft of real x is the conjugate of its one-sided forward transform, scaled as an inverse
    return r2c(x, dims, _scale(norm, False), sizes[-1]).conj()


# ---- complex-to-real (irfft, hfft) -------------------------------------------------------
def c2r_impl(name, input, s, dim, norm, hermitian_fwd):
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
