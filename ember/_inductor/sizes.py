"""Sizes that may be symbolic (dynamic shapes), as the passes and code generators use them.

A graph's sizes are ints or ``SymInt``s (an int subclass with ``expr``, a C/Python
expression over symbols ``s0, s1, ...``, with ``max(a, b)``/``min(a, b)`` as calls that
`C_PRELUDE` defines for C).  Here a size is an int or a `Sym` (a string
expression in C syntax), with just the arithmetic the kernels need; products and sums of
constants fold, so the usual case stays plain ints and C code stays readable.
"""
import re

__all__ = ["Sym", "size", "is_static", "key", "mul", "add", "prod", "contiguous_strides",
           "c_text", "py_text", "evaluate", "symbols_of", "C_PRELUDE"]


class Sym(str):
    """A symbolic size: its C expression text."""


# ``max(a, b)``/``min(a, b)`` of sizes (`ember.sym_max`) are calls in both C and Python; every
# C translation unit that uses sizes starts with this
C_PRELUDE = r"""
#ifndef EK_SIZE_MINMAX
#define EK_SIZE_MINMAX
static inline int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
#endif
"""
_CALLS = ("max", "min")
_ENV = {"__builtins__": {}, "max": max, "min": min}


def _render(expr):
    # a SymInt's expression: a string over symbols, or, after arithmetic on one in a shape
    # rule, a tree (op, lhs, rhs) over such strings and ints
    if isinstance(expr, tuple):
        if expr[0] in _CALLS:
            return f"{expr[0]}({_render(expr[1])}, {_render(expr[2])})"
        return f"({_render(expr[1])} {expr[0]} {_render(expr[2])})"
    return str(expr)


def size(d):
    """A graph size (int or SymInt) as an int or `Sym`."""
    expr = getattr(d, "expr", None)
    if expr is not None:
        text = _render(expr).replace("//", "/")  # sizes are non-negative: C's / floors
        return int(text) if text.isdigit() else Sym(text)
    return int(d)


def is_static(shape):
    return all(isinstance(size(d), int) for d in shape)


def key(d):
    """A hashable, comparable form of a size."""
    return ("sym", str(d)) if isinstance(d, Sym) else int(d)


def _wrap(t):
    return t if re.fullmatch(r"[A-Za-z_0-9]+", t) else f"({t})"


def mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    if a == 0 or b == 0:
        return 0
    return Sym(f"{_wrap(str(a))}*{_wrap(str(b))}")


def add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    return Sym(f"{_wrap(str(a))} + {_wrap(str(b))}")


def prod(sizes):
    r = 1
    for s in sizes:
        r = mul(r, s)
    return r


def contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc = mul(acc, d)
    return tuple(reversed(strides))


def c_text(d):
    return str(d) if isinstance(d, int) else f"({d})"


def py_text(d):
    """Python source of size ``d`` (symbols are variables; C's / on sizes is //)."""
    return str(d) if isinstance(d, int) else "(" + str(d).replace("/", "//") + ")"


def evaluate(d, env):
    """The value of size ``d`` with symbol values ``env`` ({"s0": 7, ...})."""
    if isinstance(d, int):
        return d
    return int(eval(py_text(d), _ENV, env))  # noqa: S307 - our own text


def symbols_of(d):
    return set(re.findall(r"\bs\d+\b", str(d))) if isinstance(d, Sym) else set()
