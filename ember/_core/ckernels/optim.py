"""SGD and Adam(W) steps in C: one call updates every parameter of a group.

The NumPy kernels of `ember.ops.optim` run four to eight whole-array passes per parameter,
each with its ufunc call cost: for a group of many small parameters the step is call
overhead (200 parameters of 64-4096 floats: ~13 us a parameter).  These loops do one pass
per parameter, over tables of buffer addresses, and perform the NumPy kernels' operations
in the same order, each rounded to the parameter's dtype (scalars converted to it first, as
NumPy does with a Python float), so the results are the NumPy kernels' bit for bit.  FMA
contraction is switched off for these functions: it would fuse a product and a sum into one
rounding that the NumPy path does not have.

The loops are a library of their own (``ember_optim``), built with ``-fno-math-errno``: with
C's errno rule GCC keeps a branch around every ``sqrt`` and leaves Adam's loop scalar (the
function attribute and pragma forms of the flag are ignored), 3.4 ns an element at one
thread, where vectorised it is memory-bound.  The flag changes no value: sqrt is exactly
rounded either way, only errno is not set.

Parameters are dealt out to OpenMP threads from ``PARALLEL_SIZE`` elements in all; an
element's value never depends on the thread count.  float32/float64, real, C-contiguous
arrays of one dtype, float32 step counters; anything else returns False and the NumPy
kernel runs.
"""
import ctypes

import numpy as np

__all__ = ["render", "sgd_step", "adam_step"]

_ABI = 1

_C = r"""
#if defined(_OPENMP)
#define CK_PRAGMA(x) _Pragma(#x)
#else
#define CK_PRAGMA(x)
#endif

int cko_abi(void) { return CKO_ABI; }

#if defined(__clang__)
#define CKO_NOCONTRACT
#define CKO_PRAGMA_CONTRACT _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
#define CKO_NOCONTRACT __attribute__((optimize("fp-contract=off", "no-math-errno")))
#define CKO_PRAGMA_CONTRACT
#else
#define CKO_NOCONTRACT
#define CKO_PRAGMA_CONTRACT
#endif

/* NumPy's maximum: NaN from either side propagates */
#define CKO_MAX(a, b) (((a) >= (b) || (a) != (a)) ? (a) : (b))
"""

_TYPED = r"""
CKO_NOCONTRACT
static void cko_sgd_one_S(T *x, const T *g0, T *b, int64_t n, int fresh, T lr_neg, T mom,
                          T damp1, T wd, int nesterov, int maximize, int has_mom) {
    CKO_PRAGMA_CONTRACT
    for (int64_t i = 0; i < n; i++) {
        T g = maximize ? -g0[i] : g0[i];
        if (wd != 0) { T t = x[i] * wd; g = t + g; }
        if (has_mom) {
            T bi;
            if (fresh) bi = g;
            else { bi = b[i] * mom; T t = g * damp1; bi = bi + t; }
            b[i] = bi;
            if (nesterov) { T t = bi * mom; g = g + t; } else g = bi;
        }
        T u = g * lr_neg;
        x[i] = x[i] + u;
    }
}

/* params, grads, buffers: tables of addresses; sizes per parameter; fresh[i]: buffer i
   starts from the gradient */
void cko_sgd_S(int64_t np_, void **xs, void **gs, void **bs, const int64_t *sizes,
               const unsigned char *fresh, double lr, double momentum, double dampening,
               double weight_decay, int nesterov, int maximize, int nt) {
    const T lr_neg = (T)(-lr), mom = (T)momentum, damp1 = (T)(1 - dampening);
    const T wd = (T)weight_decay;
    const int has_mom = momentum != 0;
    #define CKO_SGD_BODY(p) cko_sgd_one_S((T *)xs[p], (const T *)gs[p], \
        has_mom ? (T *)bs[p] : 0, sizes[p], fresh ? fresh[p] : 0, lr_neg, mom, damp1, wd, \
        nesterov, maximize, has_mom)
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (int64_t p = 0; p < np_; p++) CKO_SGD_BODY(p);
    } else {
        for (int64_t p = 0; p < np_; p++) CKO_SGD_BODY(p);
    }
    #undef CKO_SGD_BODY
}

/* one Adam element; every branch but the amsgrad maximum (a memory operand) is a select,
   so the loop vectorises: the decoupled decay multiplies by exactly 1 when it is off */
#define CKO_ADAM_ELEM(HAS_MX)                                                      \
    T g = maximize ? -g0[i] : g0[i];                                               \
    T tw = x[i] * wd_l2;                                                           \
    g = wd_l2 != 0 ? tw + g : g;                                                   \
    T xi = x[i] * decay;                                                           \
    T t = g - m[i];                                                                \
    T ts = t * wT, tl = t * w1;                                                    \
    T mi = small_w ? m[i] + ts : g - tl;                                           \
    m[i] = mi;                                                                     \
    T gg = g * b2c;                                                                \
    gg = gg * g;                                                                   \
    T vi = v[i] * b2;                                                              \
    vi = vi + gg;                                                                  \
    v[i] = vi;                                                                     \
    if (HAS_MX) { vi = CKO_MAX(mx[i], vi); mx[i] = vi; }                           \
    T d = SQRT(vi);                                                                \
    d = d / bias2;                                                                 \
    d = d + epsT;                                                                  \
    T q = mi / d;                                                                  \
    q = q * value;                                                                 \
    x[i] = xi + q;

CKO_NOCONTRACT
static void cko_adam_one_S(T *restrict x, const T *restrict g0, float *stepp, T *restrict m,
                           T *restrict v, T *restrict mx, int64_t n, double lr, double beta1,
                           double beta2, double eps, double wd, int decoupled, int maximize) {
    CKO_PRAGMA_CONTRACT
    *stepp += 1.0f;
    const double step = (double)*stepp;
    const T wd_l2 = (T)(decoupled ? 0.0 : wd);
    const T decay = (T)(wd != 0 && decoupled ? 1 - lr * wd : 1.0);
    const double w = 1 - beta1;
    const int small_w = (w < 0 ? -w : w) < 0.5;
    const T wT = (T)w, w1 = (T)(1 - w), b2 = (T)beta2, b2c = (T)(1 - beta2);
    const T bias2 = (T)pow(1 - pow(beta2, step), 0.5), epsT = (T)eps;
    const T value = (T)(-lr / (1 - pow(beta1, step)));
    if (mx) {
        for (int64_t i = 0; i < n; i++) { CKO_ADAM_ELEM(1) }
    } else {
        for (int64_t i = 0; i < n; i++) { CKO_ADAM_ELEM(0) }
    }
}

void cko_adam_S(int64_t np_, void **xs, void **gs, void **steps, void **ms, void **vs,
                void **mxs, const int64_t *sizes, double lr, double beta1, double beta2,
                double eps, double weight_decay, int decoupled, int maximize, int nt) {
    #define CKO_ADAM_BODY(p) cko_adam_one_S((T *)xs[p], (const T *)gs[p], (float *)steps[p], \
        (T *)ms[p], (T *)vs[p], mxs ? (T *)mxs[p] : 0, sizes[p], lr, beta1, beta2, eps, \
        weight_decay, decoupled, maximize)
    if (nt > 1) {
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (int64_t p = 0; p < np_; p++) CKO_ADAM_BODY(p);
    } else {
        for (int64_t p = 0; p < np_; p++) CKO_ADAM_BODY(p);
    }
    #undef CKO_ADAM_BODY
}
"""

_NAMES = {"f32": ("float", "sqrtf"), "f64": ("double", "sqrt")}
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_F32 = np.dtype(np.float32)


def render():
    """The C text of the SGD and Adam loops, for float and double (library ``ember_optim``)."""
    parts = [f"#include <math.h>\n#include <stdint.h>\n#define CKO_ABI {_ABI}\n", _C]
    for suffix, (ctype, sqrt) in _NAMES.items():
        parts.append(f"#define T {ctype}\n#define SQRT {sqrt}\n"
                     + _TYPED.replace("_S(", f"_{suffix}(") + "#undef T\n#undef SQRT\n")
    return "".join(parts)


_P, _I64, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double
_SGD_ARGS = [_I64, _P, _P, _P, _P, _P, _D, _D, _D, _D, _I, _I, _I]
_ADAM_ARGS = [_I64, _P, _P, _P, _P, _P, _P, _P, _D, _D, _D, _D, _D, _I, _I, _I]


_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof


def _table(arrays, dtype, n):
    """The addresses of ``arrays`` (all C-contiguous, writeable, of ``dtype``) as a table,
    or None when one does not fit."""
    addresses = []
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != dtype:
            return None
        flags = a.flags
        if not (flags.c_contiguous and flags.writeable):
            return None
        # a ctypes view of the buffer: a quarter of the cost of ``a.ctypes.data``, which
        # dominated a step over many small parameters
        addresses.append(_addressof(_from_buffer(a)) if a.size else 0)
    return np.array(addresses, np.uintp)


# -ffp-contract=off as well as the functions' attribute: the vectorised loops too round
# every product and sum on its own
_FLAGS = ("-fno-math-errno", "-ffp-contract=off")
_lib = None
_tried = False
_reason = None
_fns = {}


def _load():
    global _lib, _tried, _reason
    _tried = True
    from . import build as _build
    _lib, _, _reason = _build._lite.attempt(_build.build, "ember_optim", render(),
                                            lambda lib: lib.cko_abi() == _ABI, None, _FLAGS)
    return _lib


def _fn(symbol, argtypes):
    f = _fns.get(symbol)
    if f is None and (_lib if _tried else _load()) is not None:
        f = _fns[symbol] = getattr(_lib, symbol)
        f.restype, f.argtypes = None, argtypes
    return f


def _prepare(algorithm, params, lists, argtypes):
    """(kernel, n, address tables of ``lists``, sizes) for the C loop of ``algorithm`` over
    ``params``, or None when the kernels are off or an array does not fit."""
    from . import ENABLED
    if not ENABLED or not params:
        return None
    dt = getattr(params[0], "dtype", None)
    suffix = _SUFFIX.get(dt)
    if suffix is None:
        return None
    n = len(params)
    tables = []
    for arrays in lists:
        t = _table(arrays, dt, n)
        if t is None:
            return None
        tables.append(t)
    sizes = np.fromiter((a.size for a in params), np.int64, n)
    for arrays in lists[1:]:
        if any(a.size != s for a, s in zip(arrays, sizes)):
            return None
    f = _fn(f"cko_{algorithm}_{suffix}", argtypes)
    return None if f is None else (f, n, tables, sizes)


def _threads(sizes):
    from . import _threads as threads
    return threads(int(sizes.sum()))


def sgd_step(params, grads, bufs, fresh, lr, momentum, dampening, weight_decay, nesterov,
             maximize):
    """SGD on every parameter in C; False when the arrays do not fit (nothing written)."""
    lists = [params, grads] + ([bufs] if momentum != 0 else [])
    prepared = _prepare("sgd", params, lists, _SGD_ARGS)
    if prepared is None:
        return False
    f, n, tables, sizes = prepared
    fr = np.asarray(fresh, np.uint8) if fresh else None
    f(n, tables[0].ctypes.data, tables[1].ctypes.data,
      tables[2].ctypes.data if momentum != 0 else None, sizes.ctypes.data,
      None if fr is None else fr.ctypes.data, lr, momentum, dampening, weight_decay,
      int(bool(nesterov)), int(bool(maximize)), _threads(sizes))
    return True


def adam_step(params, grads, steps, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, lr, beta1, beta2,
              eps, weight_decay, decoupled, maximize):
    """Adam/AdamW on every parameter in C; False when the arrays do not fit."""
    if any(type(s) is not np.ndarray or s.size != 1 for s in steps):
        return False
    lists = [params, grads, exp_avgs, exp_avg_sqs] + \
        ([max_exp_avg_sqs] if max_exp_avg_sqs is not None else [])
    prepared = _prepare("adam", params, lists, _ADAM_ARGS)
    if prepared is None:
        return False
    f, n, tables, sizes = prepared
    step_table = _table(steps, _F32, n)
    if step_table is None:
        return False
    f(n, tables[0].ctypes.data, tables[1].ctypes.data, step_table.ctypes.data,
      tables[2].ctypes.data, tables[3].ctypes.data,
      tables[4].ctypes.data if max_exp_avg_sqs is not None else None, sizes.ctypes.data,
      lr, beta1, beta2, eps, weight_decay, int(bool(decoupled)), int(bool(maximize)),
      _threads(sizes))
    return True
