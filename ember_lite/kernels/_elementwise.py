"""Elementwise primitives: one NumPy (or scipy.special) call each.

A kernel gets ``dt``, the result dtype the graph recorded, and computes in it (float16 and
bfloat16 in float32, rounded once, as ember does); comparisons compute in the promoted
dtype of their operands.  The runner casts every result to ``dt``."""
import numpy as np

__all__ = ["ELEMENTWISE"]

_F32 = np.dtype(np.float32)


def _compute(dt):
    if dt is None:
        return None
    return _F32 if dt.kind == "V" or dt == np.float16 else dt


def _as(x, dt):
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return x.astype(dt, copy=False) if x.dtype != dt else x
    if type(x) is int and dt is not None and dt.kind in "iu":
        # torch wraps a Python int into the integer dtype (uint8 and -2 -> 254)
        return np.asarray(x, np.int64).astype(dt)
    return x  # other Python scalars stay weak, as in torch


def _sp():
    import scipy.special as sp
    return sp


def _in_result(fn):
    """Operands cast to the compute dtype of the result."""
    def k(dt, *xs):
        cdt = _compute(dt)
        return fn(*(_as(x, cdt) for x in xs))
    return k


def _rank(x):
    k = np.asarray(x).dtype.kind
    return {"b": 0, "u": 1, "i": 1, "f": 2, "V": 2, "c": 3}.get(k, 2)


def _promoted(*xs):
    """torch's promotion of tensor operands: the highest category wins, NumPy's rule within
    it; Python scalars stay weak."""
    arrays = [x for x in xs if isinstance(x, np.ndarray)]
    if not arrays:
        return xs
    top = max(_rank(a) for a in arrays)
    tops = [a.dtype for a in arrays if _rank(a) == top]
    dt = np.result_type(*tops) if all(d.kind != "V" for d in tops) else tops[0]
    if dt.kind == "V" or dt == np.float16:
        dt = _F32
    return tuple(_as(x, dt) for x in xs)


def _compare(fn):
    def k(dt, a, b):
        return fn(*_promoted(a, b))
    return k


def _sigmoid(x):
    if np.asarray(x).dtype.kind == "c":
        return 1 / (1 + np.exp(-x))
    return _sp().expit(x)


def _sign(x):
    return x if x.dtype.kind == "b" else np.sign(x)


def _add(dt, a, b, alpha=1):
    a, b = _as(a, _compute(dt)), _as(b, _compute(dt))
    if dt == np.bool_:
        return np.logical_or(a, b if alpha else False)
    return a + b * alpha if alpha != 1 else a + b


def _sub(dt, a, b, alpha=1):
    a, b = _as(a, _compute(dt)), _as(b, _compute(dt))
    return a - b * alpha if alpha != 1 else a - b


def _pow(a, b):
    if isinstance(b, np.ndarray) and b.dtype.kind in "iu" and \
            np.asarray(a).dtype.kind in "iu" and (b < 0).any():
        # torch's integer pow: 1 ** -n = 1, (-1) ** -n = +-1, anything else ** -n = 0
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b))
        sign = np.where(b % 2 == 1, -1, 1)
        return np.where(neg, np.where(a == 1, 1, np.where(a == -1, sign, 0)), r)
    return np.power(a, b)


def _trunc_divide(a, b):
    if np.result_type(a, b).kind in "iub":
        q = np.floor_divide(a, b)
        return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
    return np.trunc(np.true_divide(a, b))


def _trunc_divide_in(dt, a, b):
    """torch rounds a half-precision quotient to the half dtype before truncating it."""
    c = _compute(dt)
    if c != dt:
        q = np.true_divide(_as(a, c), _as(b, c))
        return np.trunc(_as(_as(q, dt), c))
    return _trunc_divide(_as(a, dt), _as(b, dt))


def _round(dt, x, decimals=0):
    x = _as(x, _compute(dt))
    return np.round(x, decimals) if x.dtype.kind != "i" else x


def _where(dt, c, a, b):
    cdt = dt
    return np.where(c, _as(a, cdt), _as(b, cdt))


def _polygamma(dt, x, n):
    return _sp().polygamma(n, _as(x, _compute(dt)))


def _polynomial(first, step, shifted):
    def k(dt, x, n, dtype=None):
        cdt = _compute(np.dtype(dtype) if dtype is not None else dt)
        x = np.asarray(x).astype(cdt)
        if shifted:
            x = 2 * x - 1
        n = np.trunc(np.asarray(n, dtype=np.float64)).astype(np.int64)
        x, n = np.broadcast_arrays(x, n)
        out = np.where(n == 0, 1, 0).astype(cdt)
        if x.size and n.max() >= 1:
            q, p = np.ones_like(x), first(x).astype(cdt)
            out = np.where(n == 1, p, out)
            for j in range(1, int(n.max())):  # the three-term recurrence, as torch does
                q, p = p, step(j, x, p, q).astype(cdt)
                out = np.where(n == j + 1, p, out)
        return out
    return k


_CHEB = lambda k, x, p, q: 2 * x * p - q  # noqa: E731
_FAMILIES = {
    "chebyshev_polynomial_t": (lambda x: x, _CHEB),
    "chebyshev_polynomial_u": (lambda x: 2 * x, _CHEB),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, _CHEB),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, _CHEB),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": (lambda x: 1 - x,
                              lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": (lambda x: x,
                              lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}


def _standard_gamma_grad(dt, alpha, x):
    """d sample / d alpha of Gamma(alpha, 1) at a fixed CDF value (implicit
    differentiation of the regularised incomplete gamma, central differences in alpha)."""
    sp = _sp()
    a = np.asarray(alpha, np.float64)
    v = np.maximum(np.asarray(x, np.float64), np.finfo(np.float64).tiny)
    h = 1e-5 * np.maximum(a, 1e-3)
    lower = v < a

    def log_tail(aa):
        p = np.where(lower, sp.gammainc(aa, v), sp.gammaincc(aa, v))
        return np.log(np.maximum(p, 1e-300))
    d_log_tail = (log_tail(a + h) - log_tail(a - h)) / (2 * h)
    ratio = np.exp(log_tail(a) - ((a - 1) * np.log(v) - v - sp.gammaln(a)))
    g = -np.where(lower, ratio * d_log_tail, -ratio * d_log_tail)
    return np.where(np.isfinite(g), g, 0.0)


def _special(name):
    return lambda *xs: getattr(_sp(), name)(*xs)


_FLOAT_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "sigmoid": _sigmoid, "erf": _special("erf"),
    "erfc": _special("erfc"), "erfinv": _special("erfinv"), "lgamma": _special("gammaln"),
    "digamma": _special("psi"),
    "special_airy_ai": lambda x: _sp().airy(x)[0],
    "special_bessel_j0": _special("j0"), "special_bessel_j1": _special("j1"),
    "special_bessel_y0": _special("y0"), "special_bessel_y1": _special("y1"),
    "special_erfcx": _special("erfcx"), "special_i0": _special("i0"),
    "special_i0e": _special("i0e"), "special_i1": _special("i1"),
    "special_i1e": _special("i1e"), "special_log_ndtr": _special("log_ndtr"),
    "special_modified_bessel_i0": _special("i0"), "special_modified_bessel_i1": _special("i1"),
    "special_modified_bessel_k0": _special("k0"), "special_modified_bessel_k1": _special("k1"),
    "special_ndtri": _special("ndtri"),
    "special_scaled_modified_bessel_k0": _special("k0e"),
    "special_scaled_modified_bessel_k1": _special("k1e"),
}
_SAME = {
    "neg": np.negative, "sign": _sign, "floor": np.floor, "ceil": np.ceil,
    "trunc": np.trunc, "bitwise_not": np.invert,
    "mul": np.multiply, "div": np.true_divide, "pow": _pow, "maximum": np.maximum,
    "minimum": np.minimum, "fmod": np.fmod, "remainder": np.remainder,
    "floor_divide": np.floor_divide, "atan2": np.arctan2,
    "hypot": np.hypot, "copysign": np.copysign, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
    "gcd": np.gcd, "lcm": np.lcm, "special_zeta": _special("zeta"),
    "special_gammainc": _special("gammainc"), "special_gammaincc": _special("gammaincc"),
}
_COMPARE = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "nextafter": np.nextafter,
}

ELEMENTWISE = {name: _in_result(fn) for name, fn in {**_FLOAT_UNARY, **_SAME}.items()}
ELEMENTWISE.update({name: _compare(fn) for name, fn in _COMPARE.items()})
ELEMENTWISE.update({
    "abs": lambda dt, x: np.abs(x if x.dtype.kind == "c" else _as(x, _compute(dt))),
    "add": _add, "sub": _sub, "round": _round, "where": _where, "polygamma": _polygamma,
    "trunc_divide": _trunc_divide_in,
    "standard_gamma_grad": _standard_gamma_grad,
    "isnan": lambda dt, x: np.isnan(x) if x.dtype.kind in "fcV" else np.zeros(x.shape, bool),
    "signbit": lambda dt, x: np.signbit(x) if x.dtype.kind != "b" else np.zeros(x.shape, bool),
    "logical_not": lambda dt, x: np.logical_not(x),
})
for _name, (_first, _step) in _FAMILIES.items():
    ELEMENTWISE["special_" + _name] = _polynomial(_first, _step, False)
    if _name.startswith("chebyshev"):
        ELEMENTWISE["special_shifted_" + _name] = _polynomial(_first, _step, True)
