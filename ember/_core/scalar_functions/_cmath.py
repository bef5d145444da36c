"""Hand-written C shared by every rendering of the scalar-function table.

``MATH`` holds the float32 transcendentals as branch-free Cephes-style polynomials that
the compiler vectorises (the C library's expf/logf/erff calls are scalar and stop a loop
from vectorising), plus the double sigmoid.  NumPy's own SIMD exp/log/tanh are accurate to
~1 ulp, so these agree with them within 2 ulp of the float64 truth; float64 uses the C math
library, which is correctly rounded or nearly so.  ``TYPED`` is rendered once per float
type (``$T`` the C type, ``$S`` the suffix f32/f64): small helpers that expressions of
several entries share (NaN-propagating min/max).  No -ffast-math anywhere: it would let the
compiler drop NaN/inf handling.
"""

MATH = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>

static inline float ck_bits2f(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
static inline int32_t ck_f2bits(float f) { int32_t i; memcpy(&i, &f, 4); return i; }

/* exp(x) for float: n = round(x / ln2), r = x - n ln2 (two-part ln2), a degree-6 polynomial
   for exp(r), scaled by 2^n in two halves so that n in [-150, 128] needs no special case
   (denormal results are rounded once, by the last multiply).  ck_expf_core takes x already
   clamped to [-104, 88.8]; a NaN comes out NaN (it poisons the polynomial). */
static inline float ck_expf_core(float xc) {
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
    return y * ck_bits2f((n1 + 127) << 23) * ck_bits2f((n2 + 127) << 23);
}

static inline float ck_expf(float x) {
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 88.8f ? 88.8f : xc;
    float y = ck_expf_core(xc);
    return x != x ? x : y;
}

/* exp(x) for x <= 0 (or NaN), where sigmoid, erf and the normal density call it: no
   overflow to guard and no NaN select (NaN propagates through the arithmetic), which
   makes their loops about 1.4x faster. */
static inline float ck_expf_le0(float x) {
    return ck_expf_core(x < -104.0f ? -104.0f : x);
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

/* erf for float, branch-free so it vectorises (the C library's erff is scalar), and without
   exp: below 0.9, erf(x) = x + x P(x^2) (degree 5, relative minimax); from 0.9 on,
   erf(|x|) = B(|x| - 2.415), one degree-14 polynomial (absolute minimax: erf >= 0.79 there)
   on |x| clamped to 3.93, past which erf rounds to 1, capped at 1.  20 multiply-adds a lane
   (the former exp(-x^2) R(|x|) form took ~31 with its exp: 0.65 -> 0.45 ns an element at
   AVX512).  Against float64 erf over every float32: at most 1.61 ulp with FMA contraction
   (AVX2/AVX512; the worst near 0.92), 1.74 without (DEFAULT, every 17th float).  A NaN
   takes the first branch and stays NaN; +-inf gives +-1; -0 stays -0. */
static inline float ck_erff(float x) {
    float a = fabsf(x);
    float z = x * x;
    float p = -6.090268143e-04f;
    p = p * z + 5.011945497e-03f;
    p = p * z - 2.677889727e-02f;
    p = p * z + 1.128214076e-01f;
    p = p * z - 3.761252463e-01f;
    p = p * z + 1.283791661e-01f;
    float small = x + x * p;
    float u = (a < 3.93f ? a : 3.93f) - 2.41499996f;
    float b = 1.264250841e-06f;
    b = b * u - 8.229076229e-07f;
    b = b * u - 1.832187445e-05f;
    b = b * u + 3.549772009e-05f;
    b = b * u + 6.424414460e-05f;
    b = b * u - 3.341740812e-04f;
    b = b * u + 4.799599410e-04f;
    b = b * u + 3.126581432e-04f;
    b = b * u - 3.056870308e-03f;
    b = b * u + 7.607872598e-03f;
    b = b * u - 1.153540146e-02f;
    b = b * u + 1.176064834e-02f;
    b = b * u - 7.988656871e-03f;
    b = b * u + 3.307799343e-03f;
    b = b * u + 9.993629456e-01f;
    float big = copysignf(b < 1.0f ? b : 1.0f, x);
    return a >= 0.9f ? big : small;
}

/* 1 / (1 + exp(-|x|)), or exp(-|x|) / (1 + exp(-|x|)) for x < 0: one division, the
   select on its numerator; a NaN propagates through e */
static inline float ck_sigmoidf(float x) {
    float e = ck_expf_le0(-fabsf(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

static inline double ck_sigmoid(double x) {
    double e = exp(-fabs(x));
    double d = 1.0 + e;
    return x >= 0.0 ? 1.0 / d : (x != x ? x : e / d);
}
"""

# NaN-propagating max/min (torch's maximum/clamp/relu keep a NaN from either side; C's
# fmax/fmin drop it)
TYPED = r"""
static inline $T sf_max_$S($T a, $T b) { return (a > b || a != a) ? a : b; }
static inline $T sf_min_$S($T a, $T b) { return (a < b || a != a) ? a : b; }
"""
