"""torch's CPU sampling algorithms, vectorised over a `Generator`'s mt19937 stream.

Each function reproduces what torch's CPU kernels compute from the same raw words, so
values match torch bit for bit after the same ``manual_seed``: which draw (32- or 64-bit)
each element consumes, the order of consumption, and the arithmetic that maps words to
samples (including the float32 precision of the intermediate steps).  Float32 normals of
16 or more elements follow torch's vectorised Box-Muller, whose log/sin/cos are the
Cephes polynomials of its AVX2 kernels, evaluated here operation by operation in float32
(plain multiplies and adds: the rounding of every step matters).
"""
import math
from fractions import Fraction

import numpy as np

from . import _random_c

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_U64 = np.uint64
_M24 = _U64((1 << 24) - 1)
_M53 = _U64((1 << 53) - 1)
_f = np.float32
_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def digits(dt):
    """Mantissa digits torch uses for ``dt`` (std::numeric_limits<T>::digits)."""
    return _DIGITS.get(dt.name, 24)


def _opmath(dt):
    return _F64 if dt == _F64 else _F32


# ---- uniform [0, 1) --------------------------------------------------------------------
def unit_f32(g, n):
    """``n`` floats in [0, 1): a 32-bit word's low 24 bits over 2**24."""
    w = g._u32(n).astype(np.uint32)  # in place on 4-byte words: half the passes' traffic
    w &= np.uint32((1 << 24) - 1)
    r = w.astype(_F32)
    r *= _f(2.0 ** -24)
    return r


def unit_f64(g, n):
    """``n`` doubles in [0, 1): a 64-bit draw's low 53 bits over 2**53."""
    return (g._u64(n) & _M53).astype(_F64) * 2.0 ** -53


def unit(g, n, dt):
    """torch's uniform_real_distribution<dt>(0, 1) draws, in dt's accumulate type; half
    types use their own mantissa width on a 32-bit word."""
    if dt == _F64:
        return unit_f64(g, n)
    d = digits(dt)
    if d == 24:
        return unit_f32(g, n)
    return (g._u32(n) & _U64((1 << d) - 1)).astype(_F32) * _f(2.0 ** -d)


def uniform(g, n, dt, low, high):
    """``uniform_(low, high)``: a [0, 1) draw scaled in the op-math type (float for halves),
    rounded to ``dt``; a value rounding up to ``high`` becomes ``low``."""
    om = _opmath(dt)
    lo, hi = om.type(low), om.type(high)
    x = unit(g, n, om)
    if lo != 0 or hi != 1:  # x * (to - from) + from, contracted to one fma by the compiler
        x = _fma32(x, hi - lo, lo) if om == _F32 else _fma64(x, hi - lo, lo)
    r = x.astype(dt, copy=False)
    if r.dtype != om or hi != 1:
        r[r == dt.type(high)] = dt.type(low)
    return r


# ---- normal ----------------------------------------------------------------------------
def _fma32(a, b, c):
    """float32 fused multiply-add: the float64 product of two floats is exact, so only the
    final rounding is left (torch's AVX2 kernels are compiled with FMA contraction)."""
    return (np.asarray(a, _F64) * np.asarray(b, _F64) + np.asarray(c, _F64)).astype(_F32)


def _log_ps(x):
    """Cephes logf as torch's log256_ps evaluates it (with the compiler's fused
    multiply-adds), for x in (0, 1]."""
    x = np.maximum(x, _f(1.1754944e-38))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 127).astype(_F32) + _f(1)
    x = ((bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)).view(_F32)
    mask = x < _f(0.707106781186547524)
    x = x - _f(1)
    e = e - mask.astype(_F32)
    x = x + np.where(mask, x + _f(1), _f(0))
    z = x * x
    y = np.full_like(x, _f(7.0376836292E-2))
    for c in (-1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
              -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1):
        y = _fma32(y, x, _f(c))
    y = _fma32(y * x, z, e * _f(-2.12194440e-4))
    y = _fma32(z, _f(-0.5), y)
    return _fma32(e, _f(0.693359375), x + y)


def _sincos_ps(x):
    """Cephes sinf/cosf as torch's sincos256_ps evaluates them, for x >= 0."""
    j = (x * _f(1.27323954473516)).astype(np.int32)
    j = (j + 1) & np.int32(~1)
    y = j.astype(_F32)
    sign_sin = ((j & 4) << 29).astype(np.uint32)
    poly = (j & 2) == 0
    x = _fma32(y, _f(-0.78515625), x)
    x = _fma32(y, _f(-2.4187564849853515625e-4), x)
    x = _fma32(y, _f(-3.77489497744594108e-8), x)
    sign_cos = ((~(j - 2) & 4) << 29).astype(np.uint32)
    z = x * x
    c = _fma32(z, _f(2.443315711809948E-005), _f(-1.388731625493765E-003))
    c = _fma32(c, z, _f(4.166664568298827E-002))
    c = _fma32(c * z, z, -(z * _f(0.5))) + _f(1)
    s = _fma32(z, _f(-1.9515295891E-4), _f(8.3321608736E-3))
    s = _fma32(s, z, _f(-1.6666654611E-1))
    s = _fma32(s * z, x, x)
    sin = np.where(poly, s, c)
    cos = np.where(poly, c, s)
    sin = (sin.view(np.uint32) ^ sign_sin).view(_F32)
    cos = (cos.view(np.uint32) ^ sign_cos).view(_F32)
    return sin, cos


def _fma64(a, b, c):
    """float64 a * b + c with one rounding (almost always): Dekker's exact product, then
    a compensated sum."""
    a = np.asarray(a, _F64)
    p = a * b
    if b == 1 or c == 0 and not np.ndim(c):
        return p + c
    split = 134217729.0
    ah = a * split - (a * split - a)
    al = a - ah
    bh = b * split - (b * split - b)
    bl = b - bh
    err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    return s + (((p - (s - bb)) + (c - bb)) + err)


def _liblog(x):
    """log through the C library (NumPy's own float64 log differs from glibc's in the
    last bit for some inputs; torch calls glibc)."""
    return np.fromiter(map(math.log, x.ravel().tolist()), _F64, x.size).reshape(x.shape)


def _fill16_f32(u, mean, std):
    """Box-Muller on blocks of 16 uniforms (rows): first half radius, second half angle."""
    out = _random_c.fill16(u, mean, std)
    if out is not None:
        return out
    radius = np.sqrt(_f(-2) * _log_ps(_f(1) - u[:, :8]))
    sin, cos = _sincos_ps(_f(2.0 * math.pi) * u[:, 8:])
    n1, n2 = radius * cos, radius * sin
    if std != 1 or mean != 0:
        n1, n2 = _fma32(n1, std, mean), _fma32(n2, std, mean)
    return np.concatenate([n1, n2], axis=1)


def _fill16_f64(u, mean, std):
    out = _random_c.fill16(u, mean, std)
    if out is not None:
        return out
    radius = np.sqrt(-2 * _liblog(1 - u[:, :8]))
    theta = (2.0 * math.pi) * u[:, 8:]
    return np.concatenate([_fma64(radius * np.cos(theta), std, mean),
                           _fma64(radius * np.sin(theta), std, mean)], axis=1)


def normal_fill(g, n, dt, mean, std):
    """torch's normal_fill (n >= 16, contiguous): n uniforms, Box-Muller per block of 16,
    and a ragged end redone as one more block of 16 fresh uniforms over the last 16."""
    fill = _fill16_f64 if dt == _F64 else _fill16_f32
    om = _opmath(dt)
    mean, std = om.type(mean), om.type(std)
    full = n // 16 * 16
    # float and double draw all n uniforms first; halves draw only the whole blocks
    u = unit(g, n if dt == om else full, om)
    out = np.empty(n, om)
    out[:full] = fill(u[:full].reshape(-1, 16), mean, std).ravel()
    if n % 16:
        out[n - 16:] = fill(unit(g, 16, om).reshape(1, 16), mean, std).ravel()
    return out.astype(dt, copy=False)


def normal_scalar(g, n, mean, std):
    """torch's serial normal_distribution<double> (Box-Muller on two doubles, the second
    sample cached in the generator), ``n`` values as float64."""
    out = []
    for _ in range(n):
        if g._normal_d is not None:
            z, g._normal_d = g._normal_d, None
        else:
            u1 = (g._one64() & ((1 << 53) - 1)) * 2.0 ** -53
            u2 = (g._one64() & ((1 << 53) - 1)) * 2.0 ** -53
            r = math.sqrt(-2.0 * math.log1p(-u2))
            theta = 2.0 * math.pi * u1
            g._normal_d = r * math.sin(theta)
            z = r * math.cos(theta)
        out.append(z if std == 1 and mean == 0 else _fma1(z, std, mean))
    return np.array(out, dtype=_F64)


def _fma1(a, b, c):
    """One correctly rounded a * b + c (exact rationals)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def normal(g, n, dt, mean, std, contiguous=True):
    if n >= 16 and contiguous:
        return normal_fill(g, n, dt, mean, std)
    return normal_scalar(g, n, mean, std).astype(dt)


# ---- integers --------------------------------------------------------------------------
def random_from_to(g, n, low, high, dt):
    """``random_(low, high)``: (word % range) + low, from a 64-bit draw when the range is
    2**28 or more (torch's open-source builds: a 32-bit word's modulo skew stays under ~5%
    below that), whatever the dtype, else from a 32-bit word."""
    rng = high - low
    wide = rng >= 1 << 28
    w = g._u64(n) if wide else g._u32(n)
    # C's unsigned arithmetic: the sum wraps modulo 2**64 like NumPy's int64 addition
    return ((w % _U64(rng)).astype(np.int64) + np.int64(low)).astype(dt)


def random_default(g, n, dt):
    """``random_()`` with no bounds: [0, max] for integers, [0, 2**digits] for floats."""
    if dt.kind == "b":
        return (g._u32(n) & _U64(1)).astype(dt)
    wide = dt in (_F64, np.dtype(np.int64))
    w = g._u64(n) if wide else g._u32(n)
    if dt.kind in "iu":
        m = int(np.iinfo(dt).max) + 1
    else:
        m = (1 << digits(dt)) + 1
    return (w % _U64(m)).astype(dt)


def randperm(g, n):
    """torch's CPU randperm for n < 2**32 / 20: swap i with i + (word % (n - i))."""
    if n >= (1 << 32) // 20:
        perm = list(range(n))
        for i, w in enumerate(g._u64(n).tolist()):  # inside-out shuffle on 64-bit draws
            z = w % (i + 1)
            perm[i] = perm[z]
            perm[z] = i
        return np.array(perm, dtype=np.int64)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    words = g._u32(n - 1)
    out = _random_c.randperm(words, n)
    if out is not None:
        return out
    perm = list(range(n))
    for i, w in enumerate(words.tolist()):
        z = i + w % (n - i)
        perm[i], perm[z] = perm[z], perm[i]
    return np.array(perm, dtype=np.int64)


# ---- other distributions ---------------------------------------------------------------
def exponential(g, n, lambd):
    """-1/lambda * log(1 - u) in double on 53-bit uniforms (glibc's log)."""
    u = unit_f64(g, n)
    out = _random_c.scaled_log1m(u, -1.0 / lambd)
    return out if out is not None else (-1.0 / lambd) * _liblog(1.0 - u)


def bernoulli_scalar(g, n, p):
    """u < p on double uniforms (one 64-bit draw per element)."""
    return unit_f64(g, n) < p


def bernoulli_tensor(g, probs):
    """u < p elementwise: double uniforms for float64 p, float ones otherwise."""
    if probs.dtype == _F64:
        return unit_f64(g, probs.size).reshape(probs.shape) < probs
    return unit_f32(g, probs.size).reshape(probs.shape) < probs.astype(_F32)


def _libmap(fn, x):
    return np.fromiter(map(fn, x.tolist()), _F64, x.size)


def geometric(g, n, p):
    """ceil(log(u) / log(1 - p)) on double uniforms."""
    return np.ceil(_libmap(math.log, unit_f64(g, n)) / math.log(1.0 - p))


def cauchy(g, n, median, sigma):
    """median + sigma * tan(pi * (u - 1/2)) on double uniforms (glibc's tan)."""
    return median + sigma * _libmap(math.tan, math.pi * (unit_f64(g, n) - 0.5))


def log_normal(g, n, mean, std):
    """exp of torch's serial double normal draws (cached second sample included)."""
    return _libmap(math.exp, normal_scalar(g, n, mean, std))
