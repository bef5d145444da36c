"""The FFT primitives: complex-to-complex, real-to-complex (one-sided) and
complex-to-real transforms over exact sizes, plus the zero-pad/trim that the
public ``n``/``s`` arguments need.  Backend: ember's own C FFT (`ckernels.fft`: batches of
power-of-two transforms, vectorised across rows, one 1-d pass per transformed dim) where it
is faster, else scipy.fft (native float32; large batches of transforms spread over ember's
threads).

Normalisation is the static ``scale`` parameter: "none", "sqrt" (1/sqrt(n)) or
"n" (1/n), independent of the direction, so that the adjoint of a transform is
the opposite-direction transform with the same ``scale``.

Derivatives (conjugate-Wirtinger convention):
* c2c is C-linear: its adjoint is the opposite-direction c2c.
* r2c keeps bins 0..n//2 of the full spectrum; its adjoint zero-fills the
  missing bins and transforms back, and since the input is real only the real
  part counts, which is c2r of the gradient with the bins that c2r counts
  twice (all but DC and, for even n, Nyquist) halved.
* c2r reads only bins 0..n//2 and counts the middle ones twice (the Hermitian
  mirror); its adjoint is r2c of the gradient with those bins doubled.
"""
import math

import numpy as np

from ..._core.blas_threads import num_threads
from ..._core.ckernels import fft as _ck
from ..._core.op import Op
from ..._core.tensor import host_tensor
from .._batching import _dims_rule

__all__ = ["C2C", "R2C", "C2R", "RESIZE", "c2c", "r2c", "c2r", "resize"]

_FWD_NORM = {"none": "backward", "n": "forward", "sqrt": "ortho"}
_BWD_NORM = {"none": "forward", "n": "backward", "sqrt": "ortho"}
# below this many elements, thread start-up costs more than the transform
_THREADED = 1 << 16
_sfft = None  # scipy.fft, imported by the first transform: it brings in scipy.special too


def _scipy_fft():
    global _sfft
    if _sfft is None:
        import scipy.fft
        _sfft = scipy.fft
    return _sfft


def _workers(x, dims):
    """scipy.fft's threads for transforming ``x`` over ``dims``: ember's thread count
    (``set_num_threads``) when there is enough work and more than one 1-d transform to share
    out (pocketfft splits a batch of transforms over its threads, never one transform, so the
    values do not depend on the count)."""
    if x.size < _THREADED or x.size <= max((x.shape[d] for d in dims), default=0):
        return 1
    return num_threads()


def _factor(scale, n):
    return 1.0 if scale == "none" else 1.0 / (n if scale == "n" else math.sqrt(n))


def _ck_takes(x, dims, sizes, real_last=False):
    """Whether ember's C FFT (`ckernels.fft`) runs every 1-d pass of the transform: power-of-
    two ``sizes`` and enough rows for each (``real_last``: the last dim is a real kind)."""
    total = x.size
    for i, (d, n) in enumerate(zip(dims, sizes)):
        real = real_last and i == len(dims) - 1
        if not _ck.takes(n, total // max(x.shape[d], 1), x.dtype, real):
            return False
    return True


def _ck_pass(kind, x, d, n, factor):
    """One 1-d pass of the C FFT along dim ``d`` (moved last and back when it is not)."""
    last = d == x.ndim - 1
    y = _ck.run(kind, x if last else np.moveaxis(x, d, -1), n, factor)
    return y if last else np.moveaxis(y, -1, d)


def _ck_c2c(x, dims, scale, forward):
    if x.dtype.kind != "c":
        x = x.astype(np.result_type(x.dtype, np.complex64))
    kind = _ck.C2C_FWD if forward else _ck.C2C_INV
    for d in dims:
        x = _ck_pass(kind, x, d, x.shape[d], _factor(scale, x.shape[d]))
    return x


def _scipy(name, x, dims, norm, s=None):
    """scipy.fft's ``name`` over ``dims``: its 1-d function for one dim (a few microseconds
    cheaper to call than the n-d one), else ``name + "n"``; ``s``: irfft's sizes."""
    sfft = _scipy_fft()
    workers = _workers(x, dims)
    if len(dims) == 1:
        n = None if s is None else s[0]
        return getattr(sfft, name)(x, n=n, axis=dims[0], norm=norm, workers=workers)
    return getattr(sfft, name + "n")(x, s=s, axes=dims, norm=norm, workers=workers)


def _c2c_kernel(xp, x, dims, scale, forward):
    if not dims:
        return x.astype(np.result_type(x.dtype, np.complex64))
    if xp is np and _ck_takes(x, dims, [x.shape[d] for d in dims]):
        return _ck_c2c(x, dims, scale, forward)
    norm = (_FWD_NORM if forward else _BWD_NORM)[scale]
    if xp is not np:  # another backend transforms with its own fft namespace
        return (xp.fft.fftn if forward else xp.fft.ifftn)(x, axes=dims, norm=norm)
    return _scipy("fft" if forward else "ifft", x, dims, norm)


def _c2c_vjp(ctx, g, x, dims, scale, forward):
    return c2c(g, dims, scale, not forward)


def _r2c_kernel(xp, x, dims, scale, last_n):
    if xp is np and _ck_takes(x, dims, [x.shape[d] for d in dims], real_last=True):
        y = _ck_pass(_ck.R2C, x, dims[-1], last_n, _factor(scale, last_n))
        return _ck_c2c(y, dims[:-1], scale, True)
    if xp is not np:
        return xp.fft.rfftn(x, axes=dims, norm=_FWD_NORM[scale])
    return _scipy("rfft", x, dims, _FWD_NORM[scale])


def _c2r_kernel(xp, x, dims, scale, last_n):
    s = [x.shape[d] for d in dims[:-1]] + [last_n]
    if xp is np and _ck_takes(x, dims, s, real_last=True):
        x = _ck_c2c(x, dims[:-1], scale, False)
        return _ck_pass(_ck.C2R, x, dims[-1], last_n, _factor(scale, last_n))
    if xp is not np:
        return xp.fft.irfftn(x, s=s, axes=dims, norm=_BWD_NORM[scale])
    return _scipy("irfft", x, dims, _BWD_NORM[scale], s)


def _mirror_weights(g, dim, last_n, doubled):
    """Per-bin weights along ``dim`` of a one-sided spectrum of length ``last_n``: 2 (or
    1/2) for the bins the Hermitian mirror counts twice, 1 for DC and Nyquist."""
    m = last_n // 2 + 1
    w = np.full(m, 2.0 if doubled else 0.5)
    w[0] = 1.0
    if last_n % 2 == 0:
        w[-1] = 1.0
    dt = g.dtype.to_real().np
    w = w.astype(dt).reshape((m,) + (1,) * (g.ndim - 1 - dim))
    return host_tensor(w, g)


def _r2c_vjp(ctx, g, x, dims, scale, last_n):
    return c2r(g * _mirror_weights(g, dims[-1], last_n, False), dims, scale, last_n)


def _c2r_vjp(ctx, g, x, dims, scale, last_n):
    return r2c(g, dims, scale, last_n) * _mirror_weights(g, dims[-1], last_n, True)


def _c2c_shape(x, dims, scale, forward):
    return x.shape, x.dtype.to_complex()


def _r2c_shape(x, dims, scale, last_n):
    s = list(x.shape)
    s[dims[-1]] = last_n // 2 + 1
    return tuple(s), x.dtype.to_complex()


def _c2r_shape(x, dims, scale, last_n):
    s = list(x.shape)
    s[dims[-1]] = last_n
    return tuple(s), x.dtype.to_real()


def _resize_kernel(xp, x, dims, sizes):
    shape = list(x.shape)
    for d, n in zip(dims, sizes):
        shape[d] = n
    out = xp.zeros(shape, dtype=x.dtype)
    idx = tuple(slice(0, min(a, b)) for a, b in zip(x.shape, shape))
    out[idx] = x[idx]
    return out


def _resize_vjp(ctx, g, x, dims, sizes):
    shape = ctx.in_meta[0][0]
    return resize(g, dims, tuple(shape[d] for d in dims))


def _resize_shape(x, dims, sizes):
    s = list(x.shape)
    for d, n in zip(dims, sizes):
        s[d] = n
    return tuple(s), x.dtype


# batching: the transforms take explicit dims, so the vmap batch goes in front and the dims
# shift by one
def _linear_jvp(fn):
    """Every primitive here is a (real-)linear map of its input: its jvp is the map of the
    tangent, with the same parameters."""
    def jvp(out, tangents, x, **params):
        t = tangents[0]
        return None if t is None else fn(t, **params)
    return jvp


C2C = Op("_fft_c2c", _c2c_kernel, _c2c_vjp, shape=_c2c_shape, save_inputs=False,
         batch=_dims_rule, jvp=_linear_jvp(lambda t, **p: C2C(t, **p)))
R2C = Op("_fft_r2c", _r2c_kernel, _r2c_vjp, shape=_r2c_shape, save_inputs=False,
         batch=_dims_rule, jvp=_linear_jvp(lambda t, **p: R2C(t, **p)))
C2R = Op("_fft_c2r", _c2r_kernel, _c2r_vjp, shape=_c2r_shape, save_inputs=False,
         batch=_dims_rule, jvp=_linear_jvp(lambda t, **p: C2R(t, **p)))
RESIZE = Op("_fft_resize", _resize_kernel, _resize_vjp, shape=_resize_shape, save_inputs=False,
            batch=_dims_rule, jvp=_linear_jvp(lambda t, **p: RESIZE(t, **p)))


def c2c(x, dims, scale, forward):
    return C2C(x, dims=tuple(dims), scale=scale, forward=bool(forward))


def r2c(x, dims, scale, last_n):
    return R2C(x, dims=tuple(dims), scale=scale, last_n=int(last_n))


def c2r(x, dims, scale, last_n):
    return C2R(x, dims=tuple(dims), scale=scale, last_n=int(last_n))


def resize(x, dims, sizes):
    """Zero-pad or trim ``x`` along ``dims`` to ``sizes`` (no-op when they already match)."""
    cur = x.shape
    pairs = [(d, n) for d, n in zip(dims, sizes) if cur[d] != n]
    if not pairs:
        return x
    return RESIZE(x, dims=tuple(d for d, _ in pairs), sizes=tuple(n for _, n in pairs))

