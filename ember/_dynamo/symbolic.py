"""Symbolic sizes: `SymInt`, an int that remembers where it came from.

While a compiled function runs, the sizes of its tensor arguments read as SymInts whose
expression names the argument and dimension they came from (a *leaf*, ``("a", i, d)``);
arithmetic on them builds expressions.  The user's Python sees ordinary ints (a SymInt is
an ``int`` with the example's value), so it runs exactly as in eager mode.  When a size
is seen to vary between calls, ember.compile renders the shapes and shape params of a
graph with that leaf as a symbol (``s0``), so one compiled graph serves every size; other
leaves render as their values.  Comparisons and hashing are the int's: a branch on a size
runs as in eager mode and, because the user's Python runs on every call, can never pick a
graph made for another branch.
"""
import operator

__all__ = ["SymInt", "leaf", "int_leaf", "render", "leaves_of", "is_symbolic", "extremum",
           "sym_max", "sym_min"]


class SymInt(int):
    """A size: an ``int`` (the example value) with ``expr``, its expression.

    ``expr`` is a leaf tuple ``("a", arg, dim)``, a node ``(op, lhs, rhs)`` over leaves and
    ints (``op`` one of ``+ - * // %`` or ``max``/``min``), or, in the graphs handed to
    backends, a string over symbols ``s0, s1, ...`` (Python syntax; ``max(s0, s1)`` is a
    call, and C code defines ``max``/``min`` on sizes, see `ember._inductor.sizes`).
    """

    def __new__(cls, value=0, expr=None):
        if expr is None:  # ``type(n)(0)`` as generic code does: a plain int
            return int(value)
        self = int.__new__(cls, value)
        self.expr = expr
        return self

    # the user sees an int: str, repr and format are the value's (``debug`` shows the expr)
    __repr__ = int.__repr__
    __str__ = int.__repr__
    __format__ = int.__format__

    def debug(self):
        return f"SymInt({int(self)}, {self.expr!r})"

    def _bin(self, other, op, sym, swap=False):
        if type(other) is bool or not isinstance(other, int):
            return NotImplemented
        value = op(int(other), int(self)) if swap else op(int(self), int(other))
        a = self.expr
        b = other.expr if isinstance(other, SymInt) else int(other)
        return SymInt(value, (sym, b, a) if swap else (sym, a, b))

    def __add__(self, o):
        return self._bin(o, operator.add, "+")

    def __radd__(self, o):
        return self._bin(o, operator.add, "+", True)

    def __sub__(self, o):
        return self._bin(o, operator.sub, "-")

    def __rsub__(self, o):
        return self._bin(o, operator.sub, "-", True)

    def __mul__(self, o):
        return self._bin(o, operator.mul, "*")

    def __rmul__(self, o):
        return self._bin(o, operator.mul, "*", True)

    def __floordiv__(self, o):
        return self._bin(o, operator.floordiv, "//")

    def __rfloordiv__(self, o):
        return self._bin(o, operator.floordiv, "//", True)

    def __mod__(self, o):
        return self._bin(o, operator.mod, "%")

    def __rmod__(self, o):
        return self._bin(o, operator.mod, "%", True)

    def __neg__(self):
        return SymInt(-int(self), ("-", 0, self.expr))

    def __pos__(self):
        return self

    def __abs__(self):
        return self if int(self) >= 0 else -self

    def __index__(self):
        # an index or a range bound takes the value: under export, a specialisation
        if GUARDS:
            self._specialised(None)
        return int(self)

    # comparisons are the int's; under ember.export they are also noted as guards
    __hash__ = int.__hash__

    def __eq__(self, o):
        return self._cmp(o, operator.eq, "==")

    def __ne__(self, o):
        return self._cmp(o, operator.ne, "!=")

    def __lt__(self, o):
        return self._cmp(o, operator.lt, "<")

    def __le__(self, o):
        return self._cmp(o, operator.le, "<=")

    def __gt__(self, o):
        return self._cmp(o, operator.gt, ">")

    def __ge__(self, o):
        return self._cmp(o, operator.ge, ">=")

    def __bool__(self):
        r = int(self) != 0
        if GUARDS:
            GUARDS[-1].append(("!=", self.expr, 0, r))
        return r

    # a float made from a size bakes the size in: under export, a specialisation
    def __truediv__(self, o):
        self._specialised(o)
        return int(self) / (int(o) if isinstance(o, SymInt) else o)

    def __rtruediv__(self, o):
        self._specialised(o)
        return o / int(self)

    def __float__(self):
        self._specialised(None)
        return float(int(self))

    def _specialised(self, other):
        if GUARDS:
            GUARDS[-1].append(("==", self.expr, int(self), True))
            if isinstance(other, SymInt):
                GUARDS[-1].append(("==", other.expr, int(other), True))

    def _cmp(self, other, op, sym):
        if type(other) is bool or not isinstance(other, int):
            return NotImplemented
        r = op(int(self), int(other))
        if GUARDS:
            GUARDS[-1].append((sym, self.expr, other.expr if isinstance(other, SymInt)
                               else int(other), r))
        return r

    def __reduce__(self):
        return (int, (int(self),))  # a pickled size is its value

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


# the guard lists of the exports under way (innermost last): each comparison of a SymInt
# appends ``(op, lhs expr, rhs expr or int, result)`` (see ember.export.guards)
GUARDS = []

# leaves: ("a", arg, dim) a size of a tensor argument, ("n", arg, 0) an int argument,
# ("u", k, 0) a value read from an input tensor under ember.export (unbacked, torch's u0)
_LEAF_KINDS = ("a", "n", "u")


def leaf(arg, dim, value):
    """Size ``dim`` of the ``arg``-th tensor argument of a compiled call."""
    return SymInt(value, ("a", arg, dim))


def int_leaf(arg, value):
    """The ``arg``-th int argument of a compiled call."""
    return SymInt(value, ("n", arg, 0))


def plain(x):
    """``x`` with SymInts made plain ints (inside tuples, lists and Sizes too): what a compiled
    function returns, so sizes that escape are ints as in eager mode."""
    if isinstance(x, SymInt):
        return int(x)
    if isinstance(x, (tuple, list)) and not hasattr(x, "_fields"):
        items = [plain(v) for v in x]
        if any(a is not b for a, b in zip(items, x)):
            return type(x)(items)
    return x


def extremum(op, a, b):
    """``max(a, b)`` (``op`` "max") or ``min(a, b)`` of ints; with a SymInt, one node,
    symbolic, with no guard on which operand wins (torch's ``Max(s0, s1)``), so one graph
    serves every ordering of the sizes (`ember.sym_max`/`sym_min`)."""
    if not isinstance(a, SymInt) and not isinstance(b, SymInt):
        return _FOLD[op](a, b)
    ea = a.expr if isinstance(a, SymInt) else int(a)
    eb = b.expr if isinstance(b, SymInt) else int(b)
    if ea == eb:
        return a
    return SymInt(_FOLD[op](int(a), int(b)), (op, ea, eb))


def sym_max(a, b):
    """``max(a, b)`` of two sizes: the node of exported graphs that computes ``max(s0, s1)``
    (torch.export's ``torch.sym_max`` node)."""
    return extremum("max", a, b)


def sym_min(a, b):
    """``min(a, b)`` of two sizes (an exported graph's ``torch.sym_min`` node)."""
    return extremum("min", a, b)


def is_symbolic(x):
    return isinstance(x, SymInt)


def leaves_of(expr, out):
    """Add the leaves of ``expr`` (a SymInt's tree) to the set ``out``."""
    if type(expr) is tuple:
        if expr[0] in _LEAF_KINDS:
            out.add(expr)
        else:
            leaves_of(expr[1], out)
            leaves_of(expr[2], out)
    return out


def render(expr, values, symbols):
    """``expr`` as a string: leaves in ``symbols`` (leaf -> name) by name, other leaves by
    their value (``values``: leaf -> int), constant subtrees folded to ints."""
    if type(expr) is not tuple:
        return int(expr)
    if expr[0] in _LEAF_KINDS:
        name = symbols.get(expr)
        return name if name is not None else values[expr]
    a = render(expr[1], values, symbols)
    b = render(expr[2], values, symbols)
    op = expr[0]
    if type(a) is int and type(b) is int:
        return _FOLD[op](a, b)
    if op in _CALLS:
        return a if a == b else f"{op}({a}, {b})"
    # identities, so sizes read as written (s0, not ((s0 - 0) // 1))
    if b == 0 and op in "+-" or b == 1 and op in ("*", "//"):
        return a
    if a == 0 and op == "+" or a == 1 and op == "*":
        return b
    return f"({a} {op} {b})"


_FOLD = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
         "%": operator.mod, "max": max, "min": min}
# nodes written as calls, ``max(a, b)``, the rest infix
_CALLS = ("max", "min")
