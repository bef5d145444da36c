"""C source of the eager kernels: one template, rendered for float and double.

Every kernel takes raw pointers to C-contiguous buffers plus an ``nt`` thread count; with
``nt == 1`` it runs a plain loop that never touches the OpenMP runtime (libgomp's pool is
not fork-safe, and DataLoader workers fork).  The float32 transcendentals are
branch-free Cephes-style polynomials the compiler vectorises (NumPy's own SIMD exp/log/tanh
are accurate to ~1 ulp, so these agree with them within 2 ulp); float64 uses the C math
library, which is correctly rounded or nearly so.  No -ffast-math: it would let the
compiler reorder sums and drop NaN/inf handling.
"""

HEADER = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>

#if defined(_OPENMP)
#define CK_PRAGMA(x) _Pragma(#x)
#else
#define CK_PRAGMA(x)
#endif

int ck_abi(void) { return ABI_VERSION; }
#if defined(_OPENMP)
int ck_openmp(void) { return 1; }
#else
int ck_openmp(void) { return 0; }
#endif

static inline float ck_bits2f(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
static inline int32_t ck_f2bits(float f) { int32_t i; memcpy(&i, &f, 4); return i; }

/* exp(x) for float: n = round(x / ln2), r = x - n ln2 (two-part ln2), a degree-6 polynomial
   for exp(r), scaled by 2^n in two halves so that n in [-150, 128] needs no special case
   (denormal results are rounded once, by the last multiply). */
static inline float ck_expf(float x) {
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 88.8f ? 88.8f : xc;
    /* round to nearest through the 1.5 * 2^23 shifter (rintf does not vectorise) */
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * (r * r) + r + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1, n2 = ni - n1;
    y = y * ck_bits2f((n1 + 127) << 23) * ck_bits2f((n2 + 127) << 23);
    return x != x ? x : y;
}

/* log(x) for float: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by a degree-9
   polynomial in m - 1; denormals are scaled into the normal range first. */
static inline float ck_logf(float x) {
    /* selects on floats, not ints: GCC 12 does not if-convert the int forms */
    float eoff = x < 1.17549435e-38f ? 23.0f : 0.0f;
    int32_t b = ck_f2bits(x < 1.17549435e-38f ? x * 8388608.0f : x);
    float ef = (float)(((b >> 23) & 0xff) - 126) - eoff;
    float m = ck_bits2f((b & 0x007fffff) | 0x3f000000);      /* in [0.5, 1) */
    float small = m < 0.707106781186547524f ? 1.0f : 0.0f;
    ef = ef - small;
    m = m + small * m - 1.0f;
    float z = m * m;
    float p = 7.0376836292e-2f;
    p = p * m - 1.1514610310e-1f;
    p = p * m + 1.1676998740e-1f;
    p = p * m - 1.2420140846e-1f;
    p = p * m + 1.4249322787e-1f;
    p = p * m - 1.6668057665e-1f;
    p = p * m + 2.0000714765e-1f;
    p = p * m - 2.4999993993e-1f;
    p = p * m + 3.3333331174e-1f;
    float y = p * m * z;
    y = y + ef * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = m + y;
    r = r + ef * 0.693359375f;
    r = x == INFINITY ? x : r;
    r = x == 0.0f ? -INFINITY : r;
    return ((x < 0.0f) | (x != x)) ? NAN : r;
}

/* tanh for float: an odd polynomial below 0.625, else 1 - 2 / (exp(2|x|) + 1). */
static inline float ck_tanhf(float x) {
    float a = fabsf(x);
    float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = x + x * z * p;
    float big = 1.0f - 2.0f / (ck_expf(a + a) + 1.0f);
    big = copysignf(big, x);
    return a < 0.625f ? small : (x != x ? x : big);
}

/* erf for float, branch-free so it vectorises (the C library's erff is scalar).  Below 1:
   erf(x) = x + x P(x^2); from 1 on: erf(|x|) = 1 - exp(-x^2) R(|x|), R ~ erfc(x) exp(x^2)
   fitted on [1, 4] (weighted minimax, in |x| - 2.5); past 4 erf rounds to +-1.  Both
   fits are within 0.05 ulp, the whole within 1.5 ulp of float64 erf. */
static inline float ck_erff(float x) {
    float a = fabsf(x);
    float z = x * x;
    float p = 7.8539044e-05f;
    p = p * z - 8.0102077e-04f;
    p = p * z + 5.1883296e-03f;
    p = p * z - 2.6853813e-02f;
    p = p * z + 1.12835854e-01f;
    p = p * z - 3.7612626e-01f;
    p = p * z + 1.2837917e-01f;
    float small = x + x * p;
    float ac = a > 4.0f ? 4.0f : a;
    float u = ac - 2.5f;
    float r = 1.0684384e-04f;
    r = r * u + 2.250661e-04f;
    r = r * u + 5.433262e-04f;
    r = r * u - 6.611164e-04f;
    r = r * u + 2.3025018e-03f;
    r = r * u - 8.132255e-03f;
    r = r * u + 2.4914624e-02f;
    r = r * u - 7.4342184e-02f;
    r = r * u + 2.108076e-01f;
    float big = copysignf(1.0f - ck_expf(-(ac * ac)) * r, x);
    return a < 1.0f ? small : (x != x ? x : big);
}

static inline float ck_sigmoidf(float x) {
    float e = ck_expf(-fabsf(x));
    float d = 1.0f + e;
    return x >= 0.0f ? 1.0f / d : (x != x ? x : e / d);
}

static inline double ck_sigmoid(double x) {
    double e = exp(-fabs(x));
    double d = 1.0 + e;
    return x >= 0.0 ? 1.0 / d : (x != x ? x : e / d);
}
"""

# one copy per dtype: T = float/double, S = f32/f64, A = accumulator type, F = math suffix
BODY = r"""
#define CK_ELEMENTWISE1(name, expr)                                                  \
void name(const T *restrict x, T *restrict y, ptrdiff_t n, int nt) {                 \
    if (nt > 1) {                                                                    \
        CK_PRAGMA(omp parallel for simd num_threads(nt) schedule(static))            \
        for (ptrdiff_t i = 0; i < n; i++) { T v = x[i]; y[i] = (expr); }             \
    } else {                                                                         \
        CK_PRAGMA(omp simd)                                                          \
        for (ptrdiff_t i = 0; i < n; i++) { T v = x[i]; y[i] = (expr); }             \
    }                                                                                \
}
#define CK_ELEMENTWISE2(name, expr)                                                  \
void name(const T *restrict g, const T *restrict x, T *restrict y, ptrdiff_t n,      \
          int nt) {                                                                  \
    if (nt > 1) {                                                                    \
        CK_PRAGMA(omp parallel for simd num_threads(nt) schedule(static))            \
        for (ptrdiff_t i = 0; i < n; i++) { T v = x[i]; y[i] = g[i] * (expr); }      \
    } else {                                                                         \
        CK_PRAGMA(omp simd)                                                          \
        for (ptrdiff_t i = 0; i < n; i++) { T v = x[i]; y[i] = g[i] * (expr); }      \
    }                                                                                \
}

static inline T gelu_tanh_one_S(T v) {
    T t = TANH((T)0.7978845608028654 * (v + (T)0.044715 * v * v * v));
    return (T)0.5 * v * ((T)1 + t);
}
static inline T gelu_tanh_grad_S(T v) {
    T v2 = v * v;
    T t = TANH((v + (T)0.044715 * v2 * v) * (T)0.7978845608028654);
    return (T)0.5 * ((T)1 + t) +
           ((T)0.5 * (T)0.7978845608028654) * v * ((T)1 - t * t) * ((T)1 + (T)0.134145 * v2);
}
static inline T gelu_one_S(T v) { return (T)0.5 * v * ((T)1 + ERF(v * (T)0.7071067811865476)); }
static inline T gelu_grad_S(T v) {
    T cdf = (T)0.5 * ((T)1 + ERF(v * (T)0.7071067811865476));
    T pdf = EXP(v * v * (T)-0.5) * (T)0.3989422804014327;
    return cdf + v * pdf;
}
static inline T silu_grad_S(T v) { T s = SIGMOID(v); return s * ((T)1 + v * ((T)1 - s)); }

CK_ELEMENTWISE1(ck_exp_S, EXP(v))
CK_ELEMENTWISE1(ck_log_S, LOG(v))
CK_ELEMENTWISE1(ck_tanh_S, TANH(v))
CK_ELEMENTWISE1(ck_sigmoid_S, SIGMOID(v))
CK_ELEMENTWISE1(ck_erf_S, ERF(v))
CK_ELEMENTWISE1(ck_silu_S, v * SIGMOID(v))
CK_ELEMENTWISE1(ck_gelu_S, gelu_one_S(v))
CK_ELEMENTWISE1(ck_gelu_tanh_S, gelu_tanh_one_S(v))
CK_ELEMENTWISE2(ck_silu_backward_S, silu_grad_S(v))
CK_ELEMENTWISE2(ck_gelu_backward_S, gelu_grad_S(v))
CK_ELEMENTWISE2(ck_gelu_tanh_backward_S, gelu_tanh_grad_S(v))
#undef CK_ELEMENTWISE1
#undef CK_ELEMENTWISE2

/* softmax / log_softmax of one row: max, then exp and sum, then scale (division, as
   NumPy's e /= sum does) or subtract log(sum). */
static inline void ck_softmax_row_S(const T *restrict x, T *restrict y, ptrdiff_t n, int lg) {
    T m = -INFINITY;
    int bad = 0;
    CK_PRAGMA(omp simd reduction(max:m) reduction(|:bad))
    for (ptrdiff_t i = 0; i < n; i++) { m = x[i] > m ? x[i] : m; bad |= x[i] != x[i]; }
    if (bad) m = NAN;
    if (bad || m == -INFINITY || m == INFINITY) {
        /* a NaN, an all -inf row or a +inf: leave it to the same formula NumPy uses */
        A s = 0;
        for (ptrdiff_t i = 0; i < n; i++) { T e = EXP(x[i] - m); s += e; y[i] = lg ? x[i] - m : e; }
        if (lg) { T l = LOG((T)s); for (ptrdiff_t i = 0; i < n; i++) y[i] -= l; }
        else { for (ptrdiff_t i = 0; i < n; i++) y[i] /= (T)s; }
        return;
    }
    A s = 0;
    CK_PRAGMA(omp simd reduction(+:s))
    for (ptrdiff_t i = 0; i < n; i++) { T e = EXP(x[i] - m); y[i] = e; s += e; }
    if (lg) {
        T l = LOG((T)s);
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) y[i] = (x[i] - m) - l;
    } else {
        T d = (T)s;
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = 0; i < n; i++) y[i] = y[i] / d;
    }
}

void ck_softmax_S(const T *restrict x, T *restrict y, ptrdiff_t rows, ptrdiff_t n, int lg,
                  int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(static))
        for (ptrdiff_t r = 0; r < rows; r++) ck_softmax_row_S(x + r * n, y + r * n, n, lg);
    } else {
        for (ptrdiff_t r = 0; r < rows; r++) ck_softmax_row_S(x + r * n, y + r * n, n, lg);
    }
}

/* (x - mean) * rstd of one row, mean and 1/sqrt(var + eps) (two passes, accumulated in A). */
static inline void ck_normalize_row_S(const T *restrict x, T *restrict y, T *restrict mean,
                                      T *restrict rstd, ptrdiff_t n, double eps) {
    A s = 0;
    CK_PRAGMA(omp simd reduction(+:s))
    for (ptrdiff_t i = 0; i < n; i++) s += x[i];
    T mu = (T)(s / (A)n);
    A q = 0;
    CK_PRAGMA(omp simd reduction(+:q))
    for (ptrdiff_t i = 0; i < n; i++) { A d = (A)(x[i] - mu); q += d * d; }
    T var = (T)(q / (A)n);
    T r = (T)1 / SQRT(var + (T)eps);
    CK_PRAGMA(omp simd)
    for (ptrdiff_t i = 0; i < n; i++) y[i] = (x[i] - mu) * r;
    *mean = mu;
    *rstd = r;
}

void ck_normalize_S(const T *restrict x, T *restrict y, T *restrict mean, T *restrict rstd,
                    ptrdiff_t rows, ptrdiff_t n, double eps, int nt) {
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(static))
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_normalize_row_S(x + r * n, y + r * n, mean + r, rstd + r, n, eps);
    } else {
        for (ptrdiff_t r = 0; r < rows; r++)
            ck_normalize_row_S(x + r * n, y + r * n, mean + r, rstd + r, n, eps);
    }
}
"""

_DTYPES = {
    "f32": dict(T="float", A="double", EXP="ck_expf", LOG="ck_logf", TANH="ck_tanhf",
                SIGMOID="ck_sigmoidf", ERF="ck_erff", SQRT="sqrtf"),
    "f64": dict(T="double", A="double", EXP="exp", LOG="log", TANH="tanh",
                SIGMOID="ck_sigmoid", ERF="erf", SQRT="sqrt"),
}
ABI_VERSION = 2


def render():
    """The whole translation unit."""
    parts = [f"#define ABI_VERSION {ABI_VERSION}\n", HEADER]
    for suffix, names in _DTYPES.items():
        defs = "".join(f"#define {k} {v}\n" for k, v in names.items())
        undefs = "".join(f"#undef {k}\n" for k in names)
        parts.append(defs + BODY.replace("_S(", f"_{suffix}(").replace("_S,", f"_{suffix},")
                     + undefs)
    return "".join(parts)
