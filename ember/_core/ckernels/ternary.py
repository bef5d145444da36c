"""lerp, where, addcmul and addcdiv in C: one pass where NumPy makes several, or branches.

NumPy's ``where`` branches per element (~4 ns each on a random mask), the table's lerp is
two formulas joined by a ``where``, and addcmul/addcdiv are three whole-array passes
(1024x512 float32 at one thread: where 2.1 ms, lerp 1.1-3.4 ms, addcmul 0.23, addcdiv
0.33; torch's lerp 0.09-0.12 ms).  These loops evaluate C expressions composed from the
scalar-function table (``c_expr``: lerp and where are entries; addcmul is add(x, mul(value,
mul(t1, t2))) and addcdiv add(x, div(mul(value, t1), t2)), the ops' NumPy order) per element,
branch-free and vectorised, and split large operands over the threads as `binary` does.
FMA contraction is off in them, so each product and sum rounds as in NumPy: every value is
the NumPy form's, bit for bit, on any thread count (the tests check it).

Operands: float32/float64 C-contiguous arrays of one shape (``where``'s condition a bool
array of that shape) or single elements (a Python number, a one-element array; addcmul's
and addcdiv's ``value`` always is), of at least ``MIN_SIZE`` elements; a bit of ``scal``
marks each single-element operand, and the loop for that combination reads it once.

The in-place forms (``a.lerp_(b, w)``, ``a.addcmul_(t1, t2)``; `into`) run the same loops
with ``y`` the target's own memory, which is also ``x0``: each element is read before its
own result is written, and no other element is, so that is safe.
"""
import sys

import numpy as np

from .binary import _CTYPE, _DTYPE, _SCALAR_TYPES, _may_share, _operand

__all__ = ["render", "TERNARY", "wrap", "into"]

TERNARY = ("lerp", "where", "addcmul", "addcdiv")


def _expr(name, dtype):
    """The C expression of ``name`` over operands v0.. composed from the table."""
    from .. import scalar_functions as _sf

    def c(f, *a):
        return _sf.c_expr(f, dtype, *a)
    if name == "addcmul":
        return c("add", "v0", c("mul", "v3", c("mul", "v1", "v2")))
    if name == "addcdiv":
        return c("add", "v0", c("div", c("mul", "v3", "v1"), "v2"))
    return c(name, "v0", "v1", "v2")
_ck = sys.modules[__name__.rpartition(".")[0]]  # the package (it imports this module)
_ndarray = np.ndarray
_BOOL = np.dtype(bool)

_HEAD = """
#if defined(__GNUC__) && !defined(__clang__)
#define CKT_NOCONTRACT __attribute__((optimize("fp-contract=off")))
#else
#define CKT_NOCONTRACT
#endif
"""

_SRC = """
static CKT_NOCONTRACT void {sym}_block(const {t0} *restrict x0, const {t} *restrict x1,
        const {t} *restrict x2, const {t} *restrict x3, {t} *restrict y, ptrdiff_t b,
        ptrdiff_t n, int scal) {{
    const ptrdiff_t lo = b * CK_BLOCK, hi = n - lo < CK_BLOCK ? n : lo + CK_BLOCK;
    switch (scal) {{
{cases}
    }}
}}

/* x3: a fourth operand (always one element), NULL for three-operand functions */
void {sym}(const {t0} *restrict x0, const {t} *restrict x1, const {t} *restrict x2,
           const {t} *restrict x3, {t} *restrict y, ptrdiff_t n, int scal, int nt) {{
    const ptrdiff_t nb = (n + CK_BLOCK - 1) / CK_BLOCK;
    if (nt > 1) {{
        CK_PRAGMA(omp parallel for num_threads(nt) schedule(guided))
        for (ptrdiff_t b = 0; b < nb; b++) {sym}_block(x0, x1, x2, x3, y, b, n, scal);
    }} else {{
        for (ptrdiff_t b = 0; b < nb; b++) {sym}_block(x0, x1, x2, x3, y, b, n, scal);
    }}
}}
"""


def _case(scal, types, expr):
    n = len(types)
    once = " ".join(f"const {types[k]} v{k} = x{k}[0];" for k in range(n) if scal >> k & 1)
    each = " ".join(f"{types[k]} v{k} = x{k}[i];" for k in range(n) if not scal >> k & 1)
    return (f"    case {scal}: {{ {once}\n        CK_PRAGMA(omp simd)\n"
            f"        for (ptrdiff_t i = lo; i < hi; i++) {{ {each} y[i] = {expr}; }}\n"
            f"        break; }}")


def render():
    """The eager library's ``ck_tern_<name>_<f32|f64>`` loops."""
    parts = ["\n/* ---- lerp and where (ember/_core/ckernels/ternary.py) ---- */\n", _HEAD]
    for s, t in _CTYPE.items():
        for name in TERNARY:
            t0 = "unsigned char" if name == "where" else t
            types, fixed = ((t0, t, t), 0) if name in ("lerp", "where") else ((t,) * 4, 8)
            expr = _expr(name, _DTYPE[s])
            # every combination but all of the first three single
            cases = "\n".join(_case(k | fixed, types, expr) for k in range(7))
            parts.append(_SRC.format(sym=f"ck_tern_{name}_{s}", t=t, t0=t0, cases=cases))
    return "".join(parts)


def _plan(name, ops):
    """``(arrays, template, scal)`` for the operands of ``name``, or None when they do not
    fit the loops."""
    like = None
    for k, x in enumerate(ops):
        if type(x) is _ndarray and x.size != 1:
            if like is None:
                like = x
            elif x.shape != like.shape:
                return None
    if like is None or like.size < _ck.MIN_SIZE:
        return None
    dt = like.dtype if name != "where" or like.dtype is not _BOOL else None
    if dt is None:  # where: the value operands decide the dtype
        dt = next((x.dtype for x in ops[1:] if type(x) is _ndarray), None)
    if dt not in _ck._SUFFIX:
        return None
    arrays, scal = [], 0
    for k, x in enumerate(ops):
        want = _BOOL if name == "where" and k == 0 else dt
        if type(x) is _ndarray:
            if x.dtype != want or not x.flags.c_contiguous:
                return None
            if x.size == 1:
                scal |= 1 << k
        elif type(x) in _SCALAR_TYPES and want is dt:
            x = _operand(x, dt)
            if x is None:
                return None
            scal |= 1 << k
        else:
            return None
        arrays.append(x)
    return None if scal & 7 == 7 else (arrays, like, dt, scal)


def wrap(name, fallback):
    """A NumPy-form function ``(xp, x0, x1, x2[, value]) -> array`` running ``ck_tern_<name>``
    when the operands fit, else the ``fallback`` with the same arguments (``value``: the
    keyword of addcmul/addcdiv)."""
    four = name in ("addcmul", "addcdiv")

    def kernel(xp, x0, x1, x2, **kw):
        # the hot path of every call: one size test before anything else
        small = _ck.MIN_SIZE
        p = None
        if _ck.ENABLED and ((type(x0) is _ndarray and x0.size >= small)
                            or (type(x1) is _ndarray and x1.size >= small)
                            or (type(x2) is _ndarray and x2.size >= small)):
            p = _plan(name, (x0, x1, x2, kw.get("value", 1)) if four else (x0, x1, x2))
        if p is not None:
            arrays, like, dt, scal = p
            f = _ck._fn(f"ck_tern_{name}_{_ck._SUFFIX[dt]}", _ck._types(*_ARGS))
            if f is not None:
                y = np.empty(like.shape, dt)
                f(*(a.ctypes.data for a in arrays), *((None,) * (4 - len(arrays))),
                  y.ctypes.data, like.size, scal, _ck._threads(like.size))
                return y
        return fallback(xp, x0, x1, x2, **kw)
    kernel.__name__ = kernel.__qualname__ = f"{name}_c"
    return kernel


_ARGS = ("c_void_p",) * 5 + ("c_ssize_t", "c_int", "c_int")


def into(name):
    """``write(y, x1, x2[, value]) -> bool``: ``y = name(y, x1, x2)`` written straight into
    ``y`` (the in-place op's target, a writeable ndarray to whose shape the caller has checked
    every array operand broadcasts), True when done: when the operands fit the loops with
    ``y`` holding the whole result and no operand overlapping ``y`` other than ``y`` itself.
    False otherwise (the caller computes a fresh result and copies it)."""
    four = name in ("addcmul", "addcdiv")

    def write(y, x1, x2, value=1):
        if not _ck.ENABLED or y.size < _ck.MIN_SIZE or not y.flags.c_contiguous:
            return False
        ops = (y, x1, x2, value) if four else (y, x1, x2)
        for x in ops[1:]:
            if type(x) is _ndarray and x is not y and _may_share(x, y):
                return False
        p = _plan(name, ops)
        if p is None or p[1] is not y:
            return False
        arrays, like, dt, scal = p
        f = _ck._fn(f"ck_tern_{name}_{_ck._SUFFIX[dt]}", _ck._types(*_ARGS))
        if f is None:
            return False
        f(*(a.ctypes.data for a in arrays), *((None,) * (4 - len(arrays))), y.ctypes.data,
          y.size, scal, _ck._threads(y.size))
        return True
    write.__name__ = write.__qualname__ = f"{name}_into"
    return write
