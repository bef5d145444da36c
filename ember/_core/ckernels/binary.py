"""Binary arithmetic (add, sub, mul, div, maximum, minimum) in C over the OpenMP threads.

NumPy's ufunc loops are as fast as a C loop on one core (memory-bound: 1024x512 float32
``a + b`` takes ~70 us either way), but they use one core where torch uses all of its
threads.  These loops split large operands over the threads; below ``PARALLEL_SIZE``
elements, at one thread or in a forked child the op keeps NumPy's loop, except for an
operand repeating along the rows (kinds 3/4 below), whose loop beats NumPy's broadcasting
on one core too from ``ROW_SIZE`` elements.  Each loop is
rendered from the scalar-function table's C expression (``c_expr``), like the unary
kernels of `source.py`.  add/sub/mul/div/max/min are single IEEE operations, exactly
rounded, so every element is bitwise NumPy's on any thread count (the tests check it).

Operand forms (``kind``), for float32/float64 C-contiguous arrays of one dtype:

* 0: both hold the whole result (equal shapes);
* 1/2: the second/first is one element (a tensor with a Python number, or a one-element
  tensor), read once;
* 3/4: the second/first repeats every ``m`` elements (a bias over the trailing dims:
  ``(N, C) + (C,)``), walked one period at a time so the inner loop stays vectorised.

The elements are dealt to the threads in blocks of ``CK_BLOCK`` (guided schedule), as the
unary kernels are.

In-place forms (``a.add_(b)``, `into`) write the result straight into the target: NumPy's
ufunc with ``out=`` (which handles any strides and overlapping operands itself), or these
loops with ``y`` the first operand's own memory.  Every element is read before its own
result is written and no other, so ``y == x0`` is safe in them; an operand that overlaps
the target any other way takes NumPy's ufunc.
"""
import sys

import numpy as np

__all__ = ["render", "BINARY", "wrap", "into", "MIN_PERIOD"]

BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
_CTYPE = {"f32": "float", "f64": "double"}
_DTYPE = {"f32": "float32", "f64": "float64"}
MIN_PERIOD = 64  # a shorter repeating operand leaves too short an inner loop: NumPy's
# a repeating operand (kinds 3/4) takes the loop on one thread too from this size: NumPy's
# broadcast loop restarts per row (1024x512 + 512 float32: 99 us against 49; from ~64K
# elements the loop beats the ctypes call's ~4 us)
ROW_SIZE = 1 << 16

_SRC = """
static inline void {sym}_block(const {t} *restrict x0, const {t} *restrict x1, {t} *restrict y,
                               ptrdiff_t b, ptrdiff_t n, ptrdiff_t m, int kind) {{
    const ptrdiff_t lo = b * CK_BLOCK, hi = n - lo < CK_BLOCK ? n : lo + CK_BLOCK;
    if (kind == 0) {{
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = lo; i < hi; i++) {{ {t} v0 = x0[i], v1 = x1[i]; y[i] = {e}; }}
    }} else if (kind == 1) {{
        const {t} v1 = x1[0];
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = lo; i < hi; i++) {{ {t} v0 = x0[i]; y[i] = {e}; }}
    }} else if (kind == 2) {{
        const {t} v0 = x0[0];
        CK_PRAGMA(omp simd)
        for (ptrdiff_t i = lo; i < hi; i++) {{ {t} v1 = x1[i]; y[i] = {e}; }}
    }} else {{
        /* one operand repeats every m elements: one period's stretch at a time */
        const {t} *restrict full = kind == 3 ? x0 : x1, *restrict row = kind == 3 ? x1 : x0;
        for (ptrdiff_t i = lo; i < hi;) {{
            const ptrdiff_t j = i % m, len = (m - j) < (hi - i) ? (m - j) : (hi - i);
            const {t} *restrict f = full + i, *restrict r = row + j;
            {t} *restrict o = y + i;
            if (kind == 3) {{
                CK_PRAGMA(omp simd)
                for (ptrdiff_t k = 0; k < len; k++) {{ {t} v0 = f[k], v1 = r[k]; o[k] = {e}; }}
            }} else {{
                CK_PRAGMA(omp simd)
                for (ptrdiff_t k = 0; k < len; k++) {{ {t} v0 = r[k], v1 = f[k]; o[k] = {e}; }}
            }}
            i += len;
        }}
    }}
}}

void {sym}(const {t} *restrict x0, const {t} *restrict x1, {t} *restrict y, ptrdiff_t n,
           ptrdiff_t m, int kind, int nt) {{
    const ptrdiff_t nb = (n + CK_BLOCK - 1) / CK_BLOCK;
    if (nt > 1) {{
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t b = 0; b < nb; b++) {sym}_block(x0, x1, y, b, n, m, kind);
    }} else {{
        for (ptrdiff_t b = 0; b < nb; b++) {sym}_block(x0, x1, y, b, n, m, kind);
    }}
}}
"""


def render():
    """The eager library's binary kernels ``ck_bin_<name>_<f32|f64>``."""
    from .. import scalar_functions as _sf
    parts = ["\n/* ---- binary arithmetic (ember/_core/ckernels/binary.py) ---- */\n"]
    for s, t in _CTYPE.items():
        for name in BINARY:
            parts.append(_SRC.format(sym=f"ck_bin_{name}_{s}", t=t,
                                     e=_sf.c_expr(name, _DTYPE[s], "v0", "v1")))
    return "".join(parts)


_ndarray = np.ndarray
_SCALAR_TYPES = (float, int)
_ck = sys.modules[__name__.rpartition(".")[0]]  # the package (it imports this module)


_F32_MAX = float(np.finfo(np.float32).max)


def _operand(x, dt):
    """A Python number as a one-element array of ``dt``, rounded once as NumPy converts a
    weak scalar; None for what the kernels leave to NumPy: an int beyond 2**53 (not exact
    as a double), a non-finite number, one outside float32's range."""
    if type(x) is int and not -(1 << 53) <= x <= (1 << 53):
        return None
    v = float(x)
    if not -_F32_MAX <= v <= _F32_MAX and (dt.itemsize == 4 or v != v or v in (_INF, -_INF)):
        return None
    return np.array(v).astype(dt)


_INF = float("inf")


def _plan(a, b):
    """``(x0, x1, out_template, m, kind)`` for NumPy operands ``a`` and ``b``, or None when
    they do not fit the kernels' forms."""
    if not _ck.ENABLED:
        return None
    PARALLEL_SIZE, _SUFFIX = _ck.PARALLEL_SIZE, _ck._SUFFIX
    ta, tb = type(a), type(b)
    if ta is _ndarray:
        if a.dtype not in _SUFFIX or not a.flags.c_contiguous:
            return None
        if tb is _ndarray:
            if b.dtype != a.dtype or not b.flags.c_contiguous:
                return None
            if a.shape == b.shape:
                return (a, b, a, a.size, 0) if a.size >= PARALLEL_SIZE else None
            big, small, first = (a, b, True) if a.size >= b.size else (b, a, False)
            if big.size < ROW_SIZE or small.ndim > big.ndim:
                return None
            if small.size == 1:
                return (a, b, big, 1, 1 if first else 2) if big.size >= PARALLEL_SIZE else None
            shp = small.shape
            while shp and shp[0] == 1:  # (1, C) against (N, C): C repeats
                shp = shp[1:]
            if small.size < MIN_PERIOD or big.shape[big.ndim - len(shp):] != shp:
                return None
            return (a, b, big, small.size, 3 if first else 4)
        if tb in _SCALAR_TYPES and a.size >= PARALLEL_SIZE:
            v = _operand(b, a.dtype)
            return None if v is None else (a, v, a, 1, 1)
        return None
    if ta in _SCALAR_TYPES and tb is _ndarray and b.size >= PARALLEL_SIZE \
            and b.dtype in _SUFFIX and b.flags.c_contiguous:
        v = _operand(a, b.dtype)
        return None if v is None else (v, b, b, 1, 2)
    return None


def wrap(name, fallback):
    """A NumPy-form function ``(xp, a, b) -> array`` that runs ``ck_bin_<name>`` over the
    threads when the operands fit and more than one thread is to be used (or, for a
    repeating operand, on one), else ``fallback(xp, a, b)`` (NumPy's loop: as fast on one
    core)."""
    def kernel(xp, a, b):
        # the hot path of every binary op: one size test before anything else
        p = _plan(a, b) if (type(a) is _ndarray and a.size >= ROW_SIZE) or (
            type(b) is _ndarray and b.size >= ROW_SIZE) else None
        if p is not None:
            x0, x1, like, m, kind = p
            f = _ck._fn(f"ck_bin_{name}_{_ck._SUFFIX[like.dtype]}", _ck._types(*_ARGS))
            nt = _ck._threads(like.size) if f is not None else 1
            if nt > 1 or kind >= 3 and f is not None:
                y = np.empty(like.shape, like.dtype)
                f(x0.ctypes.data, x1.ctypes.data, y.ctypes.data, like.size, m, kind, nt)
                return y
        return fallback(xp, a, b)
    kernel.__name__ = kernel.__qualname__ = f"{name}_threaded"
    return kernel


_ARGS = ("c_void_p", "c_void_p", "c_void_p", "c_ssize_t", "c_ssize_t", "c_int", "c_int")

# the table's NumPy forms of the ops with an in-place method (tests check they agree)
_UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide}
_INTO_KINDS = {"add": "iufc", "sub": "iufc", "mul": "iufc", "div": "fc"}
_may_share = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def _add_scaled(y, b, alpha):
    # y + alpha * b as addcmul(y, b, 1, value=alpha): b * 1 is exact, so this is the same
    # two roundings as scaling b first, in one pass and without the temporary
    from .ternary import into
    f = _SCALED["add"] = into("addcmul")
    return f(y, b, 1, alpha)


# y - alpha * b is y + (-alpha) * b exactly (negation is exact, rounding symmetric)
_SCALED = {"add": _add_scaled, "sub": lambda y, b, alpha: _SCALED["add"](y, b, -alpha)}


def into(name):
    """``write(y, b, alpha=1) -> bool``: ``y = name(y, alpha * b)`` computed straight into the
    array ``y`` (the in-place op's target), True when written.  The caller has checked that
    ``y`` is a writeable ndarray without self-overlap and that an array ``b`` broadcasts to
    ``y``'s shape.  It writes only where the op's own kernel (with torch's in-place dtype
    rules) computes this same thing: ``b`` an array of ``y``'s dtype or, for a float/complex
    ``y``, a Python number (weak: the result keeps ``y``'s dtype); ``alpha`` (add/sub) a
    Python number, scaling ``b`` in ``y``'s dtype first as the out-of-place kernel does.
    False for anything else (halves, bool, mixed dtypes): the caller takes the general path
    and its errors."""
    uf, kinds = _UFUNC[name], _INTO_KINDS[name]

    def write(y, b, alpha=1):
        k = y.dtype.kind
        if k not in kinds or y.dtype.itemsize < 4 and k == "f":
            return False
        tb = type(b)
        if tb is _ndarray:
            if b.dtype != y.dtype:
                return False
        elif tb not in _SCALAR_TYPES or k in "iu":
            return False
        if alpha != 1 or type(alpha) is bool:
            if type(alpha) not in _SCALAR_TYPES or k in "iu":
                return False
            if tb is _ndarray and b.shape == y.shape and name in _SCALED and \
                    _SCALED[name](y, b, alpha):
                return True
            b = (b * alpha).astype(y.dtype, copy=False) if tb is _ndarray else b * alpha
        if y.size >= ROW_SIZE and y.flags.c_contiguous and (
                tb is not _ndarray or b is y or not _may_share(b, y)):
            p = _plan(y, b)
            if p is not None and p[2] is y:
                x0, x1, like, m, kind = p
                f = _ck._fn(f"ck_bin_{name}_{_ck._SUFFIX[y.dtype]}", _ck._types(*_ARGS))
                nt = _ck._threads(y.size) if f is not None else 1
                if nt > 1 or kind >= 3 and f is not None:
                    f(x0.ctypes.data, x1.ctypes.data, y.ctypes.data, y.size, m, kind, nt)
                    return True
        uf(y, b, out=y)
        return True
    write.__name__ = write.__qualname__ = f"{name}_into"
    return write
