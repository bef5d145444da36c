"""The compiled form of torch's float32 Box-Muller block (see `random_streams`).

The float32 function turns rows of 16 uniforms into 16 normals with exactly the operation
sequence of torch's AVX2 kernel: Cephes log/sin/cos with the fused multiply-adds its
compiler forms written out as ``fmaf`` and contraction switched off everywhere else, so
the result is the NumPy emulation's bit for bit, an order of magnitude faster.  The float64 block,
the exponential transform and randperm's swaps call the C library's log/sin/cos as
torch does (NumPy's float64 log differs from glibc's in the last bit).  Built with
ember's kernel builder on first use; without a compiler `fill16` returns None and the
caller keeps the NumPy path.
"""
import ctypes

import numpy as np

_SOURCE = r"""
#pragma GCC optimize ("fp-contract=off")
#include <math.h>
#include <stdint.h>
#include <string.h>

int rnd_abi(void) { return 3; }

typedef union { float f; int32_t i; uint32_t u; } bits32;

static inline float cephes_log(float x) {
    const float tiny = 1.17549435e-38f;
    if (!(x > tiny)) x = tiny;
    bits32 v; v.f = x;
    int32_t bits = v.i;
    float e = (float)((int32_t)((uint32_t)bits >> 23) - 127) + 1.0f;
    v.i = (bits & ~0x7f800000) | 0x3f000000;
    x = v.f;
    int lt = x < 0.707106781186547524f;
    float tmp = lt ? x : 0.0f;
    x = x - 1.0f;
    e = e - (lt ? 1.0f : 0.0f);
    x = x + tmp;
    float z = x * x;
    float y = 7.0376836292E-2f;
    y = fmaf(y, x, -1.1514610310E-1f);
    y = fmaf(y, x, 1.1676998740E-1f);
    y = fmaf(y, x, -1.2420140846E-1f);
    y = fmaf(y, x, 1.4249322787E-1f);
    y = fmaf(y, x, -1.6668057665E-1f);
    y = fmaf(y, x, 2.0000714765E-1f);
    y = fmaf(y, x, -2.4999993993E-1f);
    y = fmaf(y, x, 3.3333331174E-1f);
    y = y * x;
    y = fmaf(y, z, e * -2.12194440e-4f);
    y = fmaf(z, -0.5f, y);
    return fmaf(e, 0.693359375f, x + y);
}

static inline void cephes_sincos(float x, float *s_out, float *c_out) {
    int32_t j = (int32_t)(x * 1.27323954473516f);
    j = (j + 1) & ~1;
    float y = (float)j;
    uint32_t sign_sin = (uint32_t)(j & 4) << 29;
    int poly = (j & 2) == 0;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    uint32_t sign_cos = (uint32_t)(~(j - 2) & 4) << 29;
    float z = x * x;
    float c = fmaf(z, 2.443315711809948E-005f, -1.388731625493765E-003f);
    c = fmaf(c, z, 4.166664568298827E-002f);
    c = fmaf(c * z, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(z, -1.9515295891E-4f, 8.3321608736E-3f);
    s = fmaf(s, z, -1.6666654611E-1f);
    s = fmaf(s * z, x, x);
    float sv = poly ? s : c, cv = poly ? c : s;
    bits32 a, b;
    a.f = sv; a.u ^= sign_sin;
    b.f = cv; b.u ^= sign_cos;
    *s_out = a.f; *c_out = b.f;
}

void rnd_fill16_f32(const float *u, float *out, int64_t blocks, float mean, float std,
                    int affine) {
    const float two_pi = 6.28318530717958647692f;
    for (int64_t b = 0; b < blocks; b++) {
        const float *ub = u + 16 * b;
        float *ob = out + 16 * b;
        #pragma omp simd
        for (int k = 0; k < 8; k++) {
            float radius = sqrtf(-2.0f * cephes_log(1.0f - ub[k]));
            float s, c;
            cephes_sincos(two_pi * ub[k + 8], &s, &c);
            float n1 = radius * c, n2 = radius * s;
            if (affine) { n1 = fmaf(n1, std, mean); n2 = fmaf(n2, std, mean); }
            ob[k] = n1;
            ob[k + 8] = n2;
        }
    }
}

void rnd_fill16_f64(const double *u, double *out, int64_t blocks, double mean, double std,
                    int affine) {
    for (int64_t b = 0; b < blocks; b++) {
        const double *ub = u + 16 * b;
        double *ob = out + 16 * b;
        for (int k = 0; k < 8; k++) {
            double radius = sqrt(-2 * log(1 - ub[k]));
            double theta = 2.0 * 3.14159265358979323846 * ub[k + 8];
            double n1 = radius * cos(theta), n2 = radius * sin(theta);
            ob[k] = affine ? fma(n1, std, mean) : n1;
            ob[k + 8] = affine ? fma(n2, std, mean) : n2;
        }
    }
}

void rnd_scaled_log1m(const double *u, double *out, int64_t n, double scale) {
    for (int64_t i = 0; i < n; i++) out[i] = scale * log(1.0 - u[i]);
}

void rnd_randperm(const uint64_t *w, int64_t *perm, int64_t n) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = 0; i + 1 < n; i++) {
        int64_t z = i + (int64_t)(w[i] % (uint64_t)(n - i));
        int64_t t = perm[i]; perm[i] = perm[z]; perm[z] = t;
    }
}
"""

_lib = None
_tried = False


def _load():
    global _lib, _tried
    _tried = True
    try:
        from .._core.ckernels import build as _build
        # -fno-math-errno lets sqrtf vectorise (its pragma form is ignored); contraction
        # stays off, so the 8 lanes compute exactly the scalar sequence, ~10x faster
        lib, _ = _build.build("ember_random", _SOURCE, lambda lib: lib.rnd_abi() == 3,
                              flags=("-fno-math-errno",))
        P, I64, F64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
        for name, args in (("rnd_fill16_f32", [P, P, I64, ctypes.c_float, ctypes.c_float,
                                               ctypes.c_int]),
                           ("rnd_fill16_f64", [P, P, I64, F64, F64, ctypes.c_int]),
                           ("rnd_scaled_log1m", [P, P, I64, F64]),
                           ("rnd_randperm", [P, P, I64])):
            fn = getattr(lib, name)
            fn.restype = None
            fn.argtypes = args
        _lib = lib
    except Exception:  # noqa: BLE001 - no compiler or no library: the NumPy path serves
        _lib = None
    return _lib


def fill16(u, mean, std):
    """Normals from rows of 16 uniforms (float32 or float64), or None (no library)."""
    lib = _lib if _tried else _load()
    if lib is None:
        return None
    u = np.ascontiguousarray(u)
    out = np.empty_like(u)
    fn = lib.rnd_fill16_f32 if u.dtype == np.float32 else lib.rnd_fill16_f64
    fn(u.ctypes.data, out.ctypes.data, u.size // 16, float(mean), float(std),
       int(std != 1 or mean != 0))
    return out


def scaled_log1m(u, scale):
    """``scale * log(1 - u)`` with the C library's log (float64), or None."""
    lib = _lib if _tried else _load()
    if lib is None:
        return None
    u = np.ascontiguousarray(u, dtype=np.float64)
    out = np.empty_like(u)
    lib.rnd_scaled_log1m(u.ctypes.data, out.ctypes.data, u.size, float(scale))
    return out


def randperm(words, n):
    """torch's small-n randperm swaps driven by ``n - 1`` 32-bit words, or None."""
    lib = _lib if _tried else _load()
    if lib is None:
        return None
    w = np.ascontiguousarray(words, dtype=np.uint64)
    out = np.empty(n, np.int64)
    lib.rnd_randperm(w.ctypes.data, out.ctypes.data, n)
    return out
