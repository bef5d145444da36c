"""The closed primitive set: the operators that ember.compile and ember.export lower.

Every other operator carries a decomposition (``op.decomp``, registered in
`ember.ops.decompositions`) written only in calls to these, so a backend that can run
the primitives can run the whole library, and a code generator needs one lowering per
primitive instead of one per operator.  Eager mode keeps its fused kernels for speed
(softmax, layer_norm, cross_entropy, attention, ...): their decompositions are what the
compiler sees, and a test checks that each equals its kernel in value and gradient.

The set, and why each member is primitive (in the spirit of tinygrad's and JAX's lax): 43
structural primitives, one elementwise primitive per scalar function (about 100, a third
of them special functions), and the extern library calls (32).

* **Elementwise** (`ELEMENTWISE`): one per scalar function, i.e. per entry a C math library
  or one C expression computes for one element: arithmetic, comparisons, logic and bits,
  the transcendental and special functions (erf, lgamma, Bessel, ... whose numerics need
  their own series), and ``where`` as the one ternary.  A fused loop of them is what the
  code generator emits.  Functions that are short formulas of others (``rsqrt``,
  ``reciprocal``, ``frac``, ``xlogy``, ``logaddexp``, the activations, ...) are not
  primitive: they fuse into the same loop after decomposition.
* **Casts and complex parts** (`CAST`): dtype conversion (``_to_copy``), device transfer,
  bit reinterpretation (``view_dtype``), and the complex layout ops (``complex``, ``real``, ``imag``, ``conj``, ``view_as_*``):
  they change how an element is stored, which no arithmetic expresses.
* **Reductions and scans** (`REDUCTION`): ``sum``, ``prod``, ``amax``, ``amin``,
  ``argmax``, ``argmin``, ``any``, ``all`` over a tuple of dims, and the four associative
  scans ``cumsum``, ``cumprod``, ``cummax``, ``cummin`` (a scan is a loop-carried
  dependence that no elementwise or reduction op expresses; a compiler emits one loop).
  ``mean``, ``var``, ``norm``, ``logsumexp``, ... decompose into them.
* **Movement** (`MOVEMENT`): ``view`` and ``_reshape_copy`` (a logical reshape, aliasing
  or copying as eager strides allow; one primitive to a compiler), ``permute``, ``expand``,
  ``slice`` and ``select`` (basic indexing), ``as_strided`` (reads the storage layout,
  which nothing logical expresses), ``cat``, ``pad`` (all modes: every output element
  reads one input element or the constant) and ``flip``.  They only move elements.
* **Gather/scatter** (`INDEXING`): ``index`` and ``index_put`` (advanced indexing, the
  general gather and scatter), ``gather``/``scatter``/``scatter_add`` along one dim, and
  ``scatter_reduce`` (prod/amax/amin/mean reductions into slots, which index_put's
  accumulate (a sum) cannot express).
* **Matmul** (`MATMUL`): ``matmul`` goes to BLAS; convolution is a decomposition
  (im2col gathers, matmul, col2im scatters), so it reaches BLAS through matmul.
* **Counter-based RNG** (`RNG`): ``_rng_uniform(seed, offset, shape=, dtype=)`` hashes
  the counter ``offset + i`` of element ``i`` with ``seed`` (splitmix64), so a compiled
  graph and every distributed rank draw the same numbers for the same ``(seed, offset)``
  whatever the order of evaluation.  The random ops decompose into it (see `rng_key` for
  how an eager Generator's state becomes ``(seed, offset)``).
* **Stop-gradient** (`AUTODIFF`): ``_stop_gradient`` is the identity whose derivative is
  zero (JAX's ``stop_gradient``): a decomposition uses it where the fused op's derivative
  deliberately ignores an input (the class weights of nll_loss, embedding's padding row)
  or rescales one (embedding's ``scale_grad_by_freq``), so differentiating the
  decomposition gives the op's gradient.
* **Creation** (`CREATION`): ``full`` (a constant), ``arange`` (iota) and ``tensor`` (a
  literal): every other factory (``empty``, ``eye``, ``linspace``, ...) decomposes into them.
* **Extern** (`EXTERN`): library calls a backend links rather than generates: sort/topk/
  searchsorted, LAPACK (``linalg_*``, ``cholesky_solve``), FFT (``_fft_*``), and the ops
  whose output shape depends on the data (``nonzero``, ``unique``, ``bincount``, ...).
  Extern ops are primitives too: ``EXTERN`` is a subset of `PRIMITIVES`.
"""
import numpy as np

from .._core import meta as _meta
from .._core.op import Op
from ._batching import _elementwise_rule

__all__ = ["PRIMITIVES", "EXTERN", "ELEMENTWISE", "CAST", "REDUCTION", "MOVEMENT", "INDEXING",
           "MATMUL", "RNG", "CREATION", "AUTODIFF", "is_primitive", "rng_key"]

_SPECIAL_UNARY = (
    "special_airy_ai", "special_bessel_j0", "special_bessel_j1", "special_bessel_y0",
    "special_bessel_y1", "special_erfcx", "special_i0", "special_i0e", "special_i1",
    "special_i1e", "special_log_ndtr", "special_modified_bessel_i0", "special_modified_bessel_i1",
    "special_modified_bessel_k0", "special_modified_bessel_k1", "special_ndtri",
    "special_scaled_modified_bessel_k0", "special_scaled_modified_bessel_k1")
# orthogonal polynomials P_n(x) with a tensor degree n: one scalar recurrence per element
_POLYNOMIALS = tuple(f"special_{k}_polynomial_{s}" for k, s in (
    ("chebyshev", "t"), ("chebyshev", "u"), ("chebyshev", "v"), ("chebyshev", "w"),
    ("shifted_chebyshev", "t"), ("shifted_chebyshev", "u"), ("shifted_chebyshev", "v"),
    ("shifted_chebyshev", "w"), ("hermite", "h"), ("hermite", "he"), ("laguerre", "l"),
    ("legendre", "p")))

ELEMENTWISE = frozenset((
    # unary
    "abs", "neg", "sign", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
    "atanh", "sigmoid", "erf", "erfc", "erfinv", "lgamma", "digamma", "floor", "ceil",
    "trunc", "round", "isnan", "signbit", "logical_not", "bitwise_not")
    + _SPECIAL_UNARY + (
    # binary
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder",
    "floor_divide", "trunc_divide", "atan2", "hypot", "copysign", "nextafter", "eq", "ne",
    "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm",
    "polygamma", "special_zeta", "special_gammainc", "special_gammaincc",
    # d sample / d alpha of a Gamma draw: one scalar series in (alpha, x)
    "standard_gamma_grad")
    + _POLYNOMIALS + (
    # ternary
    "where",))
CAST = frozenset(("_to_copy", "_to_device", "view_dtype", "complex", "real", "imag", "conj",
                  "view_as_real", "view_as_complex"))
REDUCTION = frozenset(("sum", "prod", "amax", "amin", "argmax", "argmin", "any", "all",
                       "cumsum", "cumprod", "cummax", "cummin"))
MOVEMENT = frozenset(("view", "_reshape_copy", "permute", "expand", "slice", "select",
                      "as_strided", "cat", "pad", "flip"))
INDEXING = frozenset(("index", "index_put", "gather", "scatter", "scatter_add",
                      "scatter_reduce"))
MATMUL = frozenset(("matmul",))
RNG = frozenset(("_rng_uniform",))
AUTODIFF = frozenset(("_stop_gradient",))
CREATION = frozenset(("full", "arange", "tensor"))
EXTERN = frozenset((
    # sorting and searching: comparison networks a library does best
    "sort", "topk", "searchsorted",
    # data-dependent output shapes: no static-shape program computes them
    "nonzero", "unique", "unique_consecutive", "bincount", "histogram",
    # LAPACK
    "linalg_cholesky_ex", "linalg_det", "linalg_eig", "linalg_eigh", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv_ex", "linalg_ldl_factor_ex", "linalg_ldl_solve",
    "linalg_lstsq", "linalg_lu_factor_ex", "linalg_matrix_exp", "linalg_pinv", "linalg_qr",
    "linalg_slogdet", "linalg_solve_ex", "linalg_solve_triangular", "linalg_svd",
    "linalg_svdvals", "cholesky_solve", "_lu_pivots_to_perm",
    # FFT
    "_fft_c2c", "_fft_r2c", "_fft_c2r"))

PRIMITIVES = ELEMENTWISE | CAST | REDUCTION | MOVEMENT | INDEXING | MATMUL | RNG | CREATION | \
    AUTODIFF | EXTERN


def is_primitive(op):
    """Whether ``op`` (an Op, an in-place variant or a name) is in the primitive set."""
    name = op if isinstance(op, str) else getattr(op, "name", None)
    return name in PRIMITIVES


# ---- the counter-based RNG --------------------------------------------------------------
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(z):
    # the finaliser of splitmix64: a bijection of uint64 with full avalanche, so consecutive
    # counters give independent-looking words (uint64 arrays wrap silently, as intended)
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def _rng_uniform_kernel(xp, seed, offset, shape, dtype):
    n = int(np.prod(shape, dtype=np.int64))
    key = xp.asarray(seed).astype(np.uint64) * _GOLDEN
    counters = xp.arange(n, dtype=np.uint64) + xp.asarray(offset).astype(np.uint64)
    bits = _splitmix64(_splitmix64(counters + key))
    dt = np.dtype(dtype)
    if dt == np.float64:
        u = (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    else:  # 24 bits: every value exactly representable in float32, never rounds up to 1
        u = ((bits >> np.uint64(40)).astype(np.float32) * np.float32(2.0 ** -24)).astype(dt)
    return u.reshape(tuple(shape))


RNG_UNIFORM = Op("_rng_uniform", _rng_uniform_kernel, None, differentiable=False,
                 save_inputs=False, category="random", shape=lambda seed, offset, shape, dtype: (
                     tuple(shape), _meta.as_dtype(dtype)),
                 doc="Uniform [0, 1) numbers of ``shape``: element i hashes counter offset + i "
                     "with seed (0-d int64 tensors).")


STOP_GRADIENT = Op("_stop_gradient", lambda xp, x: x[...], None, differentiable=False,
                   save_inputs=False, view=True, shape=_meta.same, batch=_elementwise_rule,
                   doc="The identity, with a zero derivative (JAX's stop_gradient).")


def rng_key(generator=None):
    """The ``(seed, offset)`` pair (0-d int64 tensors) a decomposed random op passes to
    ``_rng_uniform``, taken from an eager Generator (the default one if None).

    The eager Generator is a PCG64 stream, not a counter: each decomposed random op draws
    one 62-bit word from it as its counter offset, and uses the Generator's initial seed
    as the key.  So ``manual_seed`` makes decomposed (and compiled) random ops
    reproducible, successive ops use disjoint counter ranges (with overwhelming
    probability), and a compiled graph receives ``(seed, offset)`` as inputs instead of
    holding generator state."""
    from .._core import random as _random
    from .._core.tensor import wrap
    g = generator if generator is not None else _random.default_generator
    off = int(g._gen.integers(0, 2 ** 62))
    return (wrap(np.asarray(g.initial_seed() & (2 ** 63 - 1), dtype=np.int64)),
            wrap(np.asarray(off, dtype=np.int64)))

