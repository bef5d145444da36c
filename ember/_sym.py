"""torch's ``sym_*`` helpers: size arithmetic that model code writes to stay compile-friendly.

On plain numbers they compute the value.  Under ``ember.compile``/``ember.export`` sizes are
`ember._dynamo.symbolic.SymInt` (an ``int`` carrying its expression), so a helper keeps the
result symbolic where that class has the operation (``sym_sum`` adds expressions;
``sym_max``/``sym_min`` make a ``max(s0, s1)`` node, as torch's ``Max(s0, s1)``, so one
graph serves every ordering of the sizes and export records no guard on it; ``sym_ite``
returns one of its operands, expression and all, the choice made on the values).  A float
made from a size (``sym_float``, ``sym_sqrt``) specialises the size, as ``float(size)`` does.
"""
import abc
import builtins
import math

import numpy as np

from ._core import checks as _checks
from ._core.dispatch import overridable
from ._core.tensor import Tensor
from ._dynamo import symbolic as _symbolic

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_not", "sym_float", "sym_int", "sym_max",
           "sym_min", "sym_sum", "sym_sqrt", "sym_ite", "sym_fresh_size",
           "sym_constrain_range", "sym_constrain_range_for_size", "_constrain_as_size",
           "is_distributed"]

_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1
_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


class SymInt(abc.ABC):
    """torch's symbolic int, for ``isinstance``: the sizes ``ember.compile``/``ember.export``
    hand a program (`ember._dynamo.symbolic.SymInt`, an ``int`` with its expression) are
    instances; plain ints are not.  Only the tracer makes them (from a value and an
    expression), so this class is not instantiated, like torch's outside its tracer."""

    def __init__(self, node):
        raise TypeError("ember.SymInt is made by ember.compile/ember.export for the sizes "
                        "they trace, not by programs")


SymInt.register(_symbolic.SymInt)


class SymFloat(abc.ABC):
    """torch's symbolic float.  ember has no symbolic floats: a float computed from a size is
    a plain float with the size specialised, so no ember value is an instance."""

    def __init__(self, node):
        raise TypeError("ember has no symbolic floats: a float computed from a size is a "
                        "plain float (the size is specialised)")


class SymBool(abc.ABC):
    """torch's symbolic bool.  ember has no symbolic bools: comparing sizes gives a plain
    bool (a guard under ember.export), so no ember value is an instance."""

    def __init__(self, node):
        raise TypeError("ember has no symbolic bools: comparing sizes gives a plain bool")


@overridable
def sym_not(a):
    """Logical negation of a bool (or SymBool)."""
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


@overridable
def sym_float(a):
    """``float(a)``; a size becomes its value (specialised)."""
    if isinstance(a, SymFloat):
        return a
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return _python(builtins.float, a)


@overridable
def sym_int(a):
    """``int(a)``, truncating toward zero; a symbolic size is returned as it is."""
    if isinstance(a, SymInt):
        return a
    return _python(builtins.int, a)


def _python(fn, a):
    """``fn(a)`` with Python's own exception (raised here, so the public wrapper does not
    take a ValueError from a builtin for NumPy's and translate it)."""
    try:
        return fn(a)
    except (ValueError, TypeError, OverflowError) as e:
        raise type(e)(*e.args) from None


def _extremum(op, a, b):
    for x in (a, b):
        if not isinstance(x, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(x)}")
    pick = builtins.max if op == "max" else builtins.min
    # unlike builtins.max/min, a float operand makes the result a float either way
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(pick(a, b))
    if isinstance(a, _symbolic.SymInt) or isinstance(b, _symbolic.SymInt):
        return _symbolic.extremum(op, a, b)   # one node, no guard: max(s0, s1)
    return pick(a, b)


@overridable
def sym_max(a, b):
    """``max(a, b)`` of ints/floats, a float if either is one; of sizes, a size that stays
    symbolic (``max(s0, s1)``), so no graph is specialised to which one is larger."""
    return _extremum("max", a, b)


@overridable
def sym_min(a, b):
    """``min(a, b)`` of ints/floats, a float if either is one; of sizes, a symbolic size
    (``min(s0, s1)``)."""
    return _extremum("min", a, b)


@overridable
def sym_sum(*args):
    """The sum of ``args`` (``sym_sum([a, b, c])`` or ``sym_sum(a, b, c)``)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def _math_fn(name):
    def fn(a):
        if isinstance(a, SymInt):
            a = sym_float(a)
        own = getattr(a, f"__sym_{name}__", None)
        return own() if own is not None else _python(getattr(math, name), a)
    fn.__name__ = fn.__qualname__ = f"_sym_{name}"
    fn.__doc__ = f"``math.{name}`` of a number or size."
    return fn


for _name in ("sqrt", "cos", "cosh", "sin", "sinh", "tan", "tanh", "asin", "acos", "atan",
              "log2"):
    globals()[f"_sym_{_name}"] = _math_fn(_name)
del _name
sym_sqrt = overridable(_sym_sqrt)  # noqa: F821  (made in the loop above, as torch names it)


@overridable
def sym_ite(b, t, f):
    """``t if b else f``: ``t`` and ``f`` of one type."""
    if not isinstance(b, (SymBool, builtins.bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    # a size is an int here (torch's static sizes are ints where ember's are SymInts)
    tt, tf = (builtins.int if type(x) is _symbolic.SymInt else type(x) for x in (t, f))
    if tt is not tf:
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_fresh_size(expr):
    """A new size equal to ``expr``, read back from a tensor (torch's ``tensor(expr).item()``)."""
    from .ops import tensor
    return tensor(expr).item()


def _constrain(size, lo, hi):
    """Check ``lo <= size <= hi``; on a size, each bound given is an assumption (``_check``),
    which under ember.export narrows the range of a value read from an input."""
    if isinstance(size, (SymFloat, SymBool)):
        raise ValueError("Constraining SymFloat or Symbool is nyi")
    value = size if isinstance(size, SymInt) else builtins.int(size)
    # one comparison at a time: ``_check`` marks the guard just recorded as the assumption
    for bound, holds in ((lo, lambda: value >= lo), (hi, lambda: value <= hi)):
        if bound is None:
            continue
        ok = holds()
        if not ok:
            raise RuntimeError(f"Invalid value range for {builtins.int(value)} between "
                               f"[{_INT64_MIN if lo is None else lo}, "
                               f"{_INT64_MAX if hi is None else hi}].")
        _checks._check(ok)


def sym_constrain_range(size, *, min=None, max=None):
    """Check (on a symbolic size: assume) ``min <= size <= max``; ``None`` is unbounded."""
    if min is not None and max is not None and max < min:
        raise RuntimeError(f"Max must be greater than or equal to min. Got min={min} "
                           f"max={max}")
    _constrain(size, min, max)


def sym_constrain_range_for_size(size, *, min=None, max=None):
    """`sym_constrain_range` for a size: ``min`` defaults to 0, and a given ``max`` must
    exceed 2 (sizes 0 and 1 are specialised, so a size-like range reaches past them)."""
    if min is None and max is None:
        return _constrain(size, 0, None)
    if max is not None and max <= 2:
        raise RuntimeError(f"Max value to constrain_range_for_size must be greater than 2. "
                           f"got: {max}")
    sym_constrain_range(size, min=0 if min is None else min, max=max)


def _constrain_as_size(symbol, min=None, max=None):
    """``symbol`` (a value read from a tensor) is used as a size: `sym_constrain_range_for_size`
    (torch's older spelling, still called by model code)."""
    sym_constrain_range_for_size(symbol, min=min, max=max)


@overridable
def is_distributed(input):
    """False: an ember tensor lives in one process (torch's answer for every tensor that is
    not a legacy THD distributed tensor)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    return False


def _attach_method():
    from ._core.overrides import overridable as method
    m = method(is_distributed, "is_distributed")
    m.__module__ = Tensor.__module__
    m.__ember_method__ = True
    Tensor.is_distributed = m


_attach_method()
