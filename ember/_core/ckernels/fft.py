"""Batched power-of-two FFTs in C: complex-to-complex (both directions), real-to-complex
(one-sided) and complex-to-real, over the rows of a C-contiguous float32/float64 array.

The transform is a Stockham autosort FFT (radix-4 passes, one radix-2 pass for odd powers
of two) vectorised across rows: a block of ``L`` rows (8 float32 or 4 float64 lanes, one
256-bit register; 4 or 2 lanes for the rows left over) is copied into a scratch buffer
where complex element ``k`` of every row sits together, its real parts in one vector of
``L`` lanes and its imaginary parts in the next.  Every butterfly is then a handful of
whole-vector adds and multiplies with no shuffles, the passes ping-pong between two scratch
buffers (2 x 128 KiB for 8 float32 rows of 2048 complex points: they stay in L2) and need
no bit reversal.  Twiddles are per transform length,
computed once in float64 (``np.exp`` of exact integer angles) and cached here.

A real transform of even length ``n = 2h`` is a complex one of length ``h`` on
``x[2k] + i x[2k+1]`` with the standard split pass: the forward one separates the
even- and odd-sample spectra ``E = (Z[k] + conj Z[h-k]) / 2``, ``O = (Z[k] - conj
Z[h-k]) / 2i`` and writes ``X[k] = E + w^k O`` and ``X[h-k] = conj(E - w^k O)``; the
inverse builds ``Z[k] = (X[k] + conj X[h-k]) + i (X[k] - conj X[h-k]) w^-k`` (the
imaginary parts of DC and Nyquist ignored, as every FFT library does) and transforms it
back.  The scale (normalisation) multiplies in the pass that writes the output.

Tried and measured slower on this machine (Zen 4, CPU time at one thread): radix-8 passes
(eight streams per pass instead of four: L1 set conflicts; 210 -> 260 us for 64x4096),
a twiddle-free radix-8 last pass instead of radix-4 + radix-2, the four-step order with
L1-sized sub-transforms (strided element copies cost more than the passes they save), 16-row
(AVX-512) blocks, one padding element every 8 in the scratch buffers; an L1 staging area for
rows a multiple of 4 KiB apart helped 16-row blocks only.

Its own library (``ember_fft``), built and cached like the others (`build.py`); `run`
returns None when it cannot be had or the array does not fit, and the caller (ember's
fft primitives) then uses scipy.fft.  OpenMP threads over the row blocks, each block
written by one thread: the values do not depend on the thread count.
"""
import ctypes
import os

import numpy as np

from .. import blas_threads as _blas_threads
from . import build as _build

__all__ = ["run", "available", "status", "fits", "takes", "C2C_FWD", "C2C_INV", "R2C", "C2R"]

ABI_VERSION = 1
ENABLED = os.environ.get("EMBER_CKERNELS", "1") != "0"
C2C_FWD, C2C_INV, R2C, C2R = 0, 1, 2, 3
# lanes per row block, widest first: one 256-bit register of reals, then the narrower tail.
# Measured on an AVX-512 CPU that splits 512-bit operations in two (Zen 4): 8-row float32
# blocks ran a 64x4096 rfft in ~230 us, 16-row blocks (AVX-512 registers, scratch twice the
# size) in ~275; float64 4-row blocks ~400 against 8-row ~455.
_LANES = {np.dtype(np.float32): (8, 4), np.dtype(np.float64): (4, 2)}
# the build levels where the kernel beats scipy: at DEFAULT (SSE2) it only matches it
FAST_LEVELS = ("AVX2", "AVX512")
_SUFFIX = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}
MAX_LOG2 = 24  # the longest transform: 2**24 points

_HEAD = r"""
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define CK_SIMD _Pragma("omp simd")
#if defined(_OPENMP)
#define CK_PRAGMA(x) _Pragma(#x)
#else
#define CK_PRAGMA(x)
#endif
#if defined(__clang__) || __GNUC__ >= 12
#define CKF_SHUF(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define CKF_SHUF(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif
int ckf_abi(void) { return @ABI@; }
"""

# one radix-4 Stockham pass (decimation in frequency) on blocks of L lanes: element e of a
# buffer is at e * 2L (L real parts, then L imaginary parts).  n: the current sub-length,
# s: the stride (product of the radices done).  @J is +1 forward (X1 = (a-c) - j(b-d)),
# -1 inverse; @C negates the twiddles' imaginary parts for the inverse.
_R4 = r"""
/* one radix-4 butterfly on the L lanes at xa (inputs sm apart) into ya (outputs se apart);
   one: the twiddles are all 1 (p = 0; the multiplications fold away when inlined) */
static inline __attribute__((always_inline)) void ckf_bf4@D_@S_@L(
        const T *restrict xa, T *restrict ya, ptrdiff_t sm, ptrdiff_t se, T w1r, T w1i,
        T w2r, T w2i, T w3r, T w3i, const int one) {
    CK_SIMD
    for (int l = 0; l < @L; l++) {
        const T ar = xa[l], ai = xa[@L + l];
        const T br = xa[sm + l], bi = xa[sm + @L + l];
        const T cr = xa[2 * sm + l], ci = xa[2 * sm + @L + l];
        const T dr = xa[3 * sm + l], di = xa[3 * sm + @L + l];
        const T apcr = ar + cr, apci = ai + ci, amcr = ar - cr, amci = ai - ci;
        const T bpdr = br + dr, bpdi = bi + di, bmdr = br - dr, bmdi = bi - di;
        const T t1r = amcr @P bmdi, t1i = amci @M bmdr;
        const T t2r = apcr - bpdr, t2i = apci - bpdi;
        const T t3r = amcr @M bmdi, t3i = amci @P bmdr;
        ya[l] = apcr + bpdr;
        ya[@L + l] = apci + bpdi;
        if (one) {
            ya[se + l] = t1r;
            ya[se + @L + l] = t1i;
            ya[2 * se + l] = t2r;
            ya[2 * se + @L + l] = t2i;
            ya[3 * se + l] = t3r;
            ya[3 * se + @L + l] = t3i;
        } else {
            ya[se + l] = t1r * w1r - t1i * w1i;
            ya[se + @L + l] = t1r * w1i + t1i * w1r;
            ya[2 * se + l] = t2r * w2r - t2i * w2i;
            ya[2 * se + @L + l] = t2r * w2i + t2i * w2r;
            ya[3 * se + l] = t3r * w3r - t3i * w3i;
            ya[3 * se + @L + l] = t3r * w3i + t3i * w3r;
        }
    }
}

static void ckf_r4@D_@S_@L(ptrdiff_t n, ptrdiff_t s, const T *restrict x, T *restrict y,
                          const T *restrict tw) {
    const ptrdiff_t m = n / 4, E = 2 * @L, sm = s * m * E, se = s * E;
    for (ptrdiff_t q = 0; q < s; q++)  /* p = 0: w^0 = 1 */
        ckf_bf4@D_@S_@L(x + q * E, y + q * E, sm, se, 1, 0, 1, 0, 1, 0, 1);
    for (ptrdiff_t p = 1; p < m; p++) {
        const T w1r = tw[6 * p], w1i = @C tw[6 * p + 1], w2r = tw[6 * p + 2],
                w2i = @C tw[6 * p + 3], w3r = tw[6 * p + 4], w3i = @C tw[6 * p + 5];
        for (ptrdiff_t q = 0; q < s; q++)
            ckf_bf4@D_@S_@L(x + (q + s * p) * E, y + (q + 4 * s * p) * E, sm, se, w1r, w1i,
                            w2r, w2i, w3r, w3i, 0);
    }
}
"""

_BLOCK = r"""
/* the last pass of an odd power of two: n = 2, no twiddles */
static void ckf_r2_@S_@L(ptrdiff_t s, const T *restrict x, T *restrict y) {
    const ptrdiff_t E = 2 * @L, se = s * E;
    for (ptrdiff_t q = 0; q < s; q++) {
        const T *restrict xa = x + q * E;
        T *restrict ya = y + q * E;
        CK_SIMD
        for (int l = 0; l < 2 * @L; l++) {
            const T a = xa[l], b = xa[se + l];
            ya[l] = a + b;
            ya[se + l] = a - b;
        }
    }
}

/* the complex FFT of length N of the block in `a` (b: the other scratch buffer); returns
   the buffer holding the result */
static T *ckf_cfft_@S_@L(ptrdiff_t N, int inv, T *a, T *b, const T *tw) {
    ptrdiff_t n = N, s = 1;
    while (n >= 4) {
        if (inv) ckf_r4i_@S_@L(n, s, a, b, tw); else ckf_r4f_@S_@L(n, s, a, b, tw);
        tw += 6 * (n / 4);
        T *t = a; a = b; b = t;
        n /= 4;
        s *= 4;
    }
    if (n == 2) {
        ckf_r2_@S_@L(s, a, b);
        T *t = a; a = b; b = t;
    }
    return a;
}

/* tiles of L rows x L reals (L/2 complex elements): row vectors in, the lane layout out
   (transposed in registers), and back */
static inline void ckf_load_@S_@L(const T *restrict in, ptrdiff_t ldi, ptrdiff_t nr,
                                  ptrdiff_t f0, T *restrict a) {
    ckf_v@L_@S r[@L];
    for (int l = 0; l < @L; l++) {
        if (l < nr) r[l] = *(const ckf_u@L_@S *)(in + l * ldi + f0);
        else r[l] = (ckf_v@L_@S){0};
    }
    ckf_tr_@S_@L(r);
    for (int j = 0; j < @L; j++) *(ckf_v@L_@S *)(a + f0 * @L + j * @L) = r[j];
}

static inline void ckf_store_@S_@L(const T *restrict a, T scale, ptrdiff_t f0, T *restrict out,
                                   ptrdiff_t ldo, ptrdiff_t nr) {
    ckf_v@L_@S r[@L];
    for (int j = 0; j < @L; j++) r[j] = *(const ckf_v@L_@S *)(a + f0 * @L + j * @L) * scale;
    ckf_tr_@S_@L(r);
    for (int l = 0; l < nr; l++) *(ckf_u@L_@S *)(out + l * ldo + f0) = r[l];
}

/* r2c's split pass fused into the store: the tile's L/2 bins X[k] = (2E + w^k 2O) / 2 from
   Z[k] and Z[N-k] (Z[N] = Z[0]; X[0] comes out real), times `h` = scale / 2 */
static inline void ckf_store_r2c_@S_@L(const T *restrict z, ptrdiff_t N, const T *restrict rw,
                                       T h, ptrdiff_t f0, T *restrict out, ptrdiff_t ldo,
                                       ptrdiff_t nr) {
    const ptrdiff_t E = 2 * @L;
    ckf_v@L_@S r[@L];
    for (int j = 0; j < @L / 2; j++) {
        const ptrdiff_t k = f0 / 2 + j, kk = (N - k) & (N - 1);
        const ckf_v@L_@S zkr = *(const ckf_v@L_@S *)(z + k * E);
        const ckf_v@L_@S zki = *(const ckf_v@L_@S *)(z + k * E + @L);
        const ckf_v@L_@S zhr = *(const ckf_v@L_@S *)(z + kk * E);
        const ckf_v@L_@S zhi = *(const ckf_v@L_@S *)(z + kk * E + @L);
        const ckf_v@L_@S er = zkr + zhr, ei = zki - zhi, or_ = zki + zhi, oi = zhr - zkr;
        const T wr = rw[2 * k], wi = rw[2 * k + 1];
        r[2 * j] = (er + (or_ * wr - oi * wi)) * h;
        r[2 * j + 1] = (ei + (or_ * wi + oi * wr)) * h;
    }
    ckf_tr_@S_@L(r);
    for (int l = 0; l < nr; l++) *(ckf_u@L_@S *)(out + l * ldo + f0) = r[l];
}

/* one block of nr <= L rows: load (lanes past nr are zeros), transform, store.  N: the
   complex length (n for c2c, n / 2 for the real kinds); rw: the real kinds' twiddles
   w^k = exp(-2 pi i k / 2N), k < N; ldi/ldo: the row strides in T; a and b hold N + 1
   elements each */
static void ckf_block_@S_@L(int kind, const T *restrict in, T *restrict out, ptrdiff_t nr,
                            ptrdiff_t N, ptrdiff_t ldi, ptrdiff_t ldo, const T *tw,
                            const T *restrict rw, T scale, T *a, T *b) {
    const ptrdiff_t E = 2 * @L;
    const int tiled = 2 * N >= @L;  /* whole tiles per row; else element by element */
    if (tiled) {
        for (ptrdiff_t f0 = 0; f0 < 2 * N; f0 += @L) ckf_load_@S_@L(in, ldi, nr, f0, a);
    } else {
        if (nr < @L) memset(a, 0, sizeof(T) * N * E);
        for (ptrdiff_t l = 0; l < nr; l++)
            for (ptrdiff_t k = 0; k < N; k++) {
                a[k * E + l] = in[l * ldi + 2 * k];
                a[k * E + @L + l] = in[l * ldi + 2 * k + 1];
            }
    }
    if (kind == 3) {  /* c2r: Z[k] = A + iB, Z[N-k] = conj A + i conj B (module docstring) */
        T *restrict zn = a + N * E;
        for (int l = 0; l < @L; l++) {
            zn[l] = l < nr ? in[l * ldi + 2 * N] : 0;
            zn[@L + l] = 0;
        }
        CK_SIMD
        for (int l = 0; l < @L; l++) {
            const T x0 = a[l], xn = zn[l];
            a[l] = x0 + xn;
            a[@L + l] = x0 - xn;
        }
        for (ptrdiff_t k = 1; 2 * k < N; k++) {
            T *pk = a + k * E, *ph = a + (N - k) * E;
            const T wr = rw[2 * k], wi = -rw[2 * k + 1];  /* w^-k */
            CK_SIMD
            for (int l = 0; l < @L; l++) {
                const T xkr = pk[l], xki = pk[@L + l], xhr = ph[l], xhi = ph[@L + l];
                const T ar = xkr + xhr, ai = xki - xhi;  /* X[k] + conj X[N-k] */
                const T dr = xkr - xhr, di = xki + xhi;  /* X[k] - conj X[N-k] */
                const T br = dr * wr - di * wi, bi = dr * wi + di * wr;
                pk[l] = ar - bi;
                pk[@L + l] = ai + br;
                ph[l] = ar + bi;
                ph[@L + l] = br - ai;
            }
        }
        if (N >= 2) {  /* the middle bin: Z = 2 conj X */
            T *pm = a + (N / 2) * E;
            CK_SIMD
            for (int l = 0; l < @L; l++) {
                pm[l] = 2 * pm[l];
                pm[@L + l] = -2 * pm[@L + l];
            }
        }
    }
    T *z = ckf_cfft_@S_@L(N, kind == 1 || kind == 3, a, b, tw);
    if (kind == 2 && tiled) {
        for (ptrdiff_t f0 = 0; f0 < 2 * N; f0 += @L)
            ckf_store_r2c_@S_@L(z, N, rw, (T)0.5 * scale, f0, out, ldo, nr);
        for (ptrdiff_t l = 0; l < nr; l++) {  /* X[N] */
            out[l * ldo + 2 * N] = (z[l] - z[@L + l]) * scale;
            out[l * ldo + 2 * N + 1] = 0;
        }
        return;
    }
    if (kind == 2) {  /* r2c split pass, in place: X[k] = E + w^k O, X[N-k] = conj(E - w^k O) */
        T *restrict zn = z + N * E;
        const T h = (T)0.5 * scale;
        CK_SIMD
        for (int l = 0; l < @L; l++) {
            const T z0r = z[l], z0i = z[@L + l];
            z[l] = (z0r + z0i) * scale;
            z[@L + l] = 0;
            zn[l] = (z0r - z0i) * scale;
            zn[@L + l] = 0;
        }
        for (ptrdiff_t k = 1; 2 * k < N; k++) {
            T *pk = z + k * E, *ph = z + (N - k) * E;
            const T wr = rw[2 * k], wi = rw[2 * k + 1];
            CK_SIMD
            for (int l = 0; l < @L; l++) {
                const T zkr = pk[l], zki = pk[@L + l], zhr = ph[l], zhi = ph[@L + l];
                const T er = zkr + zhr, ei = zki - zhi;   /* 2E */
                const T or_ = zki + zhi, oi = zhr - zkr;  /* 2O = (Z[k] - conj Z[N-k]) / i */
                const T tr = or_ * wr - oi * wi, ti = or_ * wi + oi * wr;
                pk[l] = (er + tr) * h;
                pk[@L + l] = (ei + ti) * h;
                ph[l] = (er - tr) * h;
                ph[@L + l] = (ti - ei) * h;
            }
        }
        if (N >= 2) {  /* the middle bin: X = conj Z */
            T *pm = z + (N / 2) * E;
            CK_SIMD
            for (int l = 0; l < @L; l++) {
                pm[l] = pm[l] * scale;
                pm[@L + l] = -pm[@L + l] * scale;
            }
        }
        scale = 1;
        for (ptrdiff_t l = 0; l < nr; l++) {  /* X[N] */
            out[l * ldo + 2 * N] = zn[l];
            out[l * ldo + 2 * N + 1] = 0;
        }
    }
    if (tiled) {
        for (ptrdiff_t f0 = 0; f0 < 2 * N; f0 += @L) ckf_store_@S_@L(z, scale, f0, out, ldo, nr);
    } else {
        for (ptrdiff_t l = 0; l < nr; l++)
            for (ptrdiff_t k = 0; k < N; k++) {
                out[l * ldo + 2 * k] = z[k * E + l] * scale;
                out[l * ldo + 2 * k + 1] = z[k * E + @L + l] * scale;
            }
    }
}
"""

_DRIVER = r"""
/* rows of one transform kind (0 c2c forward, 1 c2c inverse, 2 r2c, 3 c2r) of complex length
   N; blocks of bl <= @L0 rows (fewer than @L0 to share few rows out to the threads), each in
   the narrowest lane count that holds it (every lane computes the same bits whatever its
   block) */
int ckf_run_@S(int kind, const T *in, T *out, ptrdiff_t rows, ptrdiff_t N, ptrdiff_t ldi,
               ptrdiff_t ldo, const T *tw, const T *rw, T scale, ptrdiff_t bl, int nt) {
    const ptrdiff_t nb = (rows + bl - 1) / bl;
    const size_t bytes = ((sizeof(T) * 2 * @L0 * (size_t)(N + 1) + 63) / 64) * 64;
    int ok = 1;
    CK_PRAGMA(omp parallel if (nt > 1) num_threads(nt) reduction(&&:ok))
    {
        T *a = aligned_alloc(64, 2 * bytes);
        if (!a) ok = 0;
        T *b = a ? (T *)((char *)a + bytes) : NULL;
        CK_PRAGMA(omp for schedule(dynamic, 1))
        for (ptrdiff_t i = 0; i < nb; i++) {
            if (!a) continue;
            const ptrdiff_t r0 = i * bl, nr = rows - r0 < bl ? rows - r0 : bl;
            const T *x = in + r0 * ldi;
            T *y = out + r0 * ldo;
            @TAIL
        }
        free(a);
    }
    return ok;
}
"""


def _transpose(L, size):
    """The in-register transpose of L vectors of L lanes: for h = L/2, ..., 1 the
    off-diagonal h x h blocks of every 2h x 2h block swap places, each pair of rows
    ``(i, i + h)`` by two two-source shuffles with constant masks."""
    lines = [f"typedef T ckf_v{L}_@S __attribute__((vector_size({L * size})));",
             f"typedef T ckf_u{L}_@S __attribute__((vector_size({L * size}), aligned({size}),"
             " may_alias));",
             f"typedef int{8 * size}_t ckf_m{L}_@S __attribute__((vector_size({L * size})));",
             f"static inline void ckf_tr_@S_{L}(ckf_v{L}_@S *r) {{",
             f"    ckf_v{L}_@S p, q;"]
    h = L // 2
    while h:
        lo = ", ".join(str(L + j - h if j & h else j) for j in range(L))
        hi = ", ".join(str(L + j if j & h else j + h) for j in range(L))
        for i in range(L):
            if not i & h:
                lines.append(f"    p = r[{i}]; q = r[{i + h}];")
                lines.append(f"    r[{i}] = CKF_SHUF(ckf_m{L}_@S, p, q, {lo});")
                lines.append(f"    r[{i + h}] = CKF_SHUF(ckf_m{L}_@S, p, q, {hi});")
        h //= 2
    return "\n".join(lines) + "\n}\n"


def _render_type(t, s):
    lanes = _LANES[np.dtype(np.float32 if t == "float" else np.float64)]
    parts = []
    for L in lanes:
        parts.append(_transpose(L, 4 if t == "float" else 8))
        for d, j, c in (("f", 1, ""), ("i", -1, "-")):
            r4 = _R4.replace("@D", d).replace("@C", c)
            r4 = r4.replace("@P", "+" if j > 0 else "-").replace("@M", "-" if j > 0 else "+")
            parts.append(r4.replace("@L", str(L)))
        parts.append(_BLOCK.replace("@L", str(L)))
    # the narrowest block that holds the nr rows
    call = "ckf_block_@S_{L}(kind, x, y, nr, N, ldi, ldo, tw, rw, scale, a, b);"
    tail = ""
    for L in reversed(lanes[1:]):
        tail += f"if (nr <= {L}) " + call.format(L=L) + "\n            else "
    tail += call.format(L=lanes[0])
    parts.append(_DRIVER.replace("@TAIL", tail).replace("@L0", str(lanes[0])))
    src = "".join(parts).replace("@S", s)
    return f"\n#define T {t}\n" + src + "#undef T\n"


def render():
    """The library's C source: every kernel for float and double."""
    return _HEAD.replace("@ABI@", str(ABI_VERSION)) + "".join(
        _render_type(t, s) for t, s in _SUFFIX.values())


_LIB = _build.Library("ember_fft", render, lambda lib: lib.ckf_abi() == ABI_VERSION)
_fns = {}


def available():
    """Whether the compiled FFT is in use (builds it on first call)."""
    return ENABLED and _LIB.get() is not None


def status():
    """``available``, ``reason`` (why not, or None) and the build's info (path, flags,
    ``openmp``, ``cpu_capability``, ...)."""
    ok = available()
    return dict(_LIB.info, available=ok,
                reason=None if ok else (_LIB.reason if ENABLED else "disabled by EMBER_CKERNELS=0"))


def _fn(dtype):
    f = _fns.get(dtype)
    if f is None:
        if not available():
            return None
        f = getattr(_LIB.lib, f"ckf_run_{_SUFFIX[dtype][1]}")
        real = ctypes.c_float if dtype == np.float32 else ctypes.c_double
        P, N = ctypes.c_void_p, ctypes.c_ssize_t
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, P, P, N, N, N, N, P, P, real, N, ctypes.c_int]
        _fns[dtype] = f
    return f


_TWIDDLES = {}


def _twiddles(N, real, dtype):
    """(pass twiddles of the complex length N, the real kinds' w^k for k < N or None),
    in ``dtype``; cached per (N, real, dtype)."""
    key = (N, real, dtype)
    t = _TWIDDLES.get(key)
    if t is None:
        parts = []
        n = N
        while n >= 4:
            p = np.arange(n // 4, dtype=np.float64)
            k = np.stack([p, 2 * p, 3 * p], axis=1)
            parts.append(np.exp(-2j * np.pi * (k / n)).view(np.float64).ravel())
            n //= 4
        tw = np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(2),
                                  dtype=dtype)
        rw = None
        if real:
            k = np.arange(max(N, 2), dtype=np.float64)  # the fused r2c store reads k < N
            rw = np.ascontiguousarray(np.exp(-1j * np.pi * (k / N)).view(np.float64),
                                      dtype=dtype)
        # the arrays (kept alive here) and their addresses
        t = _TWIDDLES[key] = (tw, rw, tw.ctypes.data, None if rw is None else rw.ctypes.data)
    return t


def pow2(n):
    return n >= 1 and n & (n - 1) == 0 and n <= 1 << MAX_LOG2


# The kernel pays a fixed ~5 us more per call than scipy's and a block of at least 4 lanes
# per transform: below MIN_ROWS transforms or MIN_SIZE elements scipy (pocketfft) is faster.
# Past MAX_N complex points (scratch buffers of 4 MiB: out of L2 and most of L3) its passes
# are memory-bound and slower than pocketfft's.  Measured (CPU time, one thread,
# kernel/scipy, min of 9 interleaved runs; noisy within ~10%): r2c float32 1x4096 1.36,
# 1x65536 1.13, 2x1024 1.17, 2x2048 0.91, 2x4096 0.83, 3x4096 0.58, 2x8192 0.60, 4x512 1.31,
# 4x2048 0.97, 8x1024 1.04, 16x256 1.16, 32x256 0.90, 4x4096 0.82-0.86; c2c float32 2x4096
# 0.65, 8x65536 0.76, 8x131072 1.29; c2r float32 2x4096 0.78; r2c float32 8x131072 0.70,
# 8x262144 1.21; r2c float64 2x4096 1.06, c2c float64 8x65536 0.88.
MIN_ROWS = 2
MIN_SIZE = 1 << 13
MAX_N = 1 << 16


def takes(n, rows, dtype, real=False):
    """Whether the kernel runs ``rows`` transforms of length ``n`` (a real kind when
    ``real``) in ``dtype`` (or its complex counterpart) faster than scipy."""
    dt = np.dtype(np.dtype(dtype).char.lower())
    if (not ENABLED or dt not in _LANES or not pow2(n) or rows < MIN_ROWS
            or rows * n < MIN_SIZE or (real and n < 2)):
        return False
    return ((n // 2 if real else n) <= MAX_N and available()
            and _LIB.info.get("cpu_capability") in FAST_LEVELS)


def fits(x, n, kind):
    """Whether `run` can transform ndarray ``x``: float32/float64 for `R2C`, complex64/
    complex128 for the others, with the last dimension of the kind's input size for a
    power-of-two ``n`` (the real kinds: n >= 2)."""
    if (not ENABLED or type(x) is not np.ndarray or not pow2(n) or x.ndim == 0
            or not x.dtype.isnative):
        return False
    real = kind in (R2C, C2R)
    if (x.dtype.kind == "c") == (kind == R2C) or (real and n < 2):
        return False
    if np.dtype(x.dtype.char.lower()) not in _SUFFIX:
        return False
    return x.shape[-1] == (n // 2 + 1 if kind == C2R else n)


PARALLEL_SIZE = 1 << 16  # elements from which the row blocks are shared out to the threads


def run(kind, x, n, scale=1.0):
    """The transform ``kind`` (`C2C_FWD`, `C2C_INV`, `R2C`, `C2R`) of length ``n`` over
    the last dimension of ndarray ``x`` (C-contiguous copy made if needed), times ``scale``;
    None when the kernel cannot run it (see `fits`; no library).  MemoryError when the
    scratch buffers cannot be allocated."""
    if not fits(x, n, kind):
        return None
    real = np.dtype(x.dtype.char.lower())
    f = _fn(real)
    if f is None:
        return None
    x = np.ascontiguousarray(x)
    lead = x.shape[:-1]
    rows = x.size // x.shape[-1]
    N = n // 2 if kind in (R2C, C2R) else n
    cplx = np.result_type(real, np.complex64)
    if kind == C2R:
        out = np.empty(lead + (n,), dtype=real)
        ldi, ldo = 2 * (N + 1), n
    elif kind == R2C:
        out = np.empty(lead + (N + 1,), dtype=cplx)
        ldi, ldo = n, 2 * (N + 1)
    else:
        out = np.empty(lead + (n,), dtype=cplx)
        ldi = ldo = 2 * n
    if rows == 0:
        return out
    tw = _twiddles(N, kind in (R2C, C2R), real)
    lanes = _LANES[real]
    nt, bl = 1, lanes[0]
    if x.size >= PARALLEL_SIZE and rows > lanes[-1] and _LIB.info.get("openmp"):
        nt = _blas_threads.openmp_threads()
        if nt > 1 and rows < nt * bl:  # narrower blocks, so that every thread has one
            per = -(-rows // nt)
            bl = min((v for v in lanes if v >= per), default=lanes[0])
            nt = min(nt, -(-rows // bl))
    if not f(kind, x.ctypes.data, out.ctypes.data, rows, N, ldi, ldo, tw[2], tw[3],
             float(scale), bl, nt):
        raise MemoryError(f"not enough memory for the FFT's scratch buffers "
                          f"({2 * bl * (N + 1) * real.itemsize * 2} bytes per thread)")
    return out
