"""Checking what an exported program assumed about its dynamic dimensions.

While export captures, every comparison of a symbolic size is noted (`symbolic.GUARDS`):
a broadcast compares sizes with 1, a matmul compares inner sizes, user code may branch on
``x.shape[0] > 4``.  Each comparison's outcome is an assumption of the captured graph.
Here each one that involves a dynamic dimension is tested over the dimension's declared
range (at its ends, the example value and points between).  One that does not hold for the
whole range is a constraint violation, reported as torch does, with a suggested fix: a
narrower range (``Dim("batch", min=5)``), a specialisation (``batch = 8``), or an equality
of two dims (``dy = dx``).  For ``Dim.AUTO`` dimensions export applies the fix itself: the
range narrows, or the dimension becomes static.
"""
import operator
import random
import zlib

from ..fx.experimental.symbolic_shapes import ConstraintViolationError
from .._dynamo.symbolic import _CALLS, _FOLD as _ARITH, _LEAF_KINDS

__all__ = ["check_guards", "ValueRanges"]

_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
        ">": operator.gt, ">=": operator.ge}
_NEGATE = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
INT_OO = 2 ** 63 - 1
_SEARCH_CAP = 1 << 40    # the largest size a search for a range end tries


class ValueRanges:
    """The range ``[lower, upper]`` of a symbol (torch's ValueRanges; ``int_oo`` when
    unbounded)."""
    __slots__ = ("lower", "upper")

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def __repr__(self):
        lo = "-int_oo" if self.lower <= -INT_OO else self.lower
        hi = "int_oo" if self.upper >= INT_OO else self.upper
        return f"VR[{lo}, {hi}]"

    def __eq__(self, other):
        return isinstance(other, ValueRanges) and (self.lower, self.upper) == \
            (other.lower, other.upper)


class _Var:
    """One free size: a `Dim` (all its dims, derived ones too) or one hinted dimension."""
    __slots__ = ("key", "name", "lo", "hi", "example", "auto", "leaves", "symbol", "unbacked",
                 "relaxed", "declared_lo")

    def __init__(self, key, name, lo, hi, example, auto, relaxed=False):
        self.key, self.name, self.lo, self.hi = key, name, lo, hi
        self.example, self.auto = example, auto
        # Dim.AUTO and Dim.DYNAMIC may be tied equal to other sizes (torch's relaxed
        # constraints); a named Dim may not
        self.relaxed = auto or relaxed
        self.leaves = []
        self.symbol = None
        self.unbacked = False
        # a named Dim's declared minimum when below ``lo``: its guards are checked from
        # ``lo`` (size-oblivious to 0/1, as torch), its range and input check keep this
        self.declared_lo = None


def _variables(c):
    """leaf -> (var, a, b): the leaf's size is ``a * var + b``."""
    vars_, of_leaf = {}, {}
    for lf, ds in c.leaf_specs.items():
        if lf in c.replacements:
            continue   # an expression of other sizes (see check_guards)
        v = c.leaf_values[lf]
        dim = ds.dim
        if ds.kind == "unbacked":   # a value read from an input: any int until checked
            var = vars_[("leaf", lf)] = _Var(("leaf", lf), f"u{lf[1]}", ds.min, ds.max, v,
                                             False)
            var.unbacked = True
            var.symbol = f"u{lf[1]}"
            var.leaves.append(lf)
            of_leaf[lf] = (var, 1, 0)
            continue
        path = f"{c.flat_paths[c.arg_of_leaf[lf[1]]]}.shape[{lf[2]}]"
        if dim is None:
            key, name, a, b = ("leaf", lf), path, 1, 0
            lo, hi, example = ds.min, ds.max, v
        elif hasattr(dim, "root"):
            root = dim.root
            key, name, a, b = ("dim", root.__name__), root.__name__, dim.a, dim.b
            lo, hi, example = root.min, root.max, (v - dim.b) // dim.a
        else:
            key, name, a, b = ("dim", dim.__name__), dim.__name__, 1, 0
            lo, hi, example = dim.min, dim.max, v
        var = vars_.get(key)
        if var is None:
            # sizes 0 and 1 are specialized: a dynamic size is at least 2
            var = vars_[key] = _Var(key, name, max(lo, _least_root(a, b)), hi, example,
                                    ds.kind == "auto", ds.kind == "dynamic" and dim is None)
            if dim is not None and lo < var.lo:
                var.declared_lo = lo
        var.leaves.append(lf)
        sym = c.symbols.get(lf)
        if sym is not None and a == 1 and b == 0:
            var.symbol = sym
        of_leaf[lf] = (var, a, b)
    for var in vars_.values():
        if var.symbol is None:
            for lf in var.leaves:
                s = c.symbols.get(lf, "")
                var.symbol = next((t for t in _tokens(s) if t.startswith("s")), None)
                if var.symbol:
                    break
    return vars_, of_leaf


def _least_root(a, b):
    """The least root value whose derived size ``a * r + b`` is at least 2."""
    r = 0
    while a * r + b < 2:
        r += 1
    return r


def _tokens(s):
    out, cur = [], ""
    for ch in s:
        if ch.isalnum() or ch == "_":
            cur += ch
        else:
            if cur:
                out.append(cur)
            cur = ""
    if cur:
        out.append(cur)
    return out


def _eval(expr, env):
    if type(expr) is not tuple:
        return int(expr)
    if expr[0] in _LEAF_KINDS:
        return env[expr]
    return _ARITH[expr[0]](_eval(expr[1], env), _eval(expr[2], env))


def _leaves(expr, out):
    if type(expr) is tuple:
        if expr[0] in _LEAF_KINDS:
            out.add(expr)
        else:
            _leaves(expr[1], out)
            _leaves(expr[2], out)
    return out


def _text(expr, c, of_leaf):
    if type(expr) is not tuple:
        return str(int(expr))
    if not any(lf in of_leaf for lf in _leaves(expr, set())):
        return str(_eval(expr, c.leaf_values))
    if expr[0] == "*" and _text(expr[1], c, of_leaf) == "1":
        return _text(expr[2], c, of_leaf)
    if expr[0] in _LEAF_KINDS:
        got = of_leaf.get(expr)
        if got is None:
            return str(c.leaf_values[expr])
        var, a, b = got
        s = var.name if a == 1 else f"{a}*{var.name}"
        return s if b == 0 else f"({s} + {b})"
    if expr[0] in _CALLS:
        return f"{expr[0]}({_text(expr[1], c, of_leaf)}, {_text(expr[2], c, of_leaf)})"
    return f"({_text(expr[1], c, of_leaf)} {expr[0]} {_text(expr[2], c, of_leaf)})"


def _holds(guard, env):
    op, lhs, rhs, _ = guard
    try:
        return _OPS[op](_eval(lhs, env), _eval(rhs, env))
    except ZeroDivisionError:
        return False


def _env(c, of_leaf, values):
    env = dict(c.leaf_values)
    for lf, (var, a, b) in of_leaf.items():
        env[lf] = a * values[var.key] + b
    for lf, expr in c.replacements.items():
        env[lf] = _eval(expr, env)
    return env


def _single_auto_leaf(expr, of_leaf):
    if type(expr) is tuple and expr[0] in _LEAF_KINDS and expr in of_leaf:
        var, a, b = of_leaf[expr]
        return var.relaxed and a == 1 and b == 0
    return False


def _candidates(var):
    hi = min(var.hi, _SEARCH_CAP)
    pts = {var.lo, var.lo + 1, var.example, hi, (var.lo + hi) // 2, var.example + 1,
           max(var.lo, var.example - 1), var.example * 2, var.example * 3 + 1}
    # seeded by the key's text, not hash(): str hashes change per process, and the points
    # tried (so the guards found violated) must not
    rng = random.Random(zlib.crc32(repr(var.key).encode()))
    for _ in range(4):
        pts.add(rng.randint(var.lo, min(hi, max(var.lo, var.example * 8))))
    return sorted(p for p in pts if var.lo <= p <= hi)


def _interval(guard, var, base, c, of_leaf):
    """The largest interval of values of ``var`` around its example on which ``guard``
    holds (the guards are monotone in practice: comparisons of linear sizes)."""
    def ok(x):
        values = dict(base)
        values[var.key] = x
        return _holds(guard, _env(c, of_leaf, values))
    lo, hi = var.example, var.example
    top = min(var.hi, _SEARCH_CAP)
    step = 1
    while lo > var.lo and ok(lo - 1):   # walk down, doubling, then bisect
        nxt = max(var.lo, lo - step)
        if ok(nxt):
            lo, step = nxt, step * 2
        else:
            step = max(1, step // 2)
            if step == 1 and not ok(lo - 1):
                break
    step = 1
    while hi < top and ok(hi + 1):
        nxt = min(top, hi + step)
        if ok(nxt):
            hi, step = nxt, step * 2
        else:
            step = max(1, step // 2)
            if step == 1 and not ok(hi + 1):
                break
    if hi == top and top == _SEARCH_CAP:
        hi = var.hi
    return lo, hi


def check_guards(c):
    """Check the guards of capture ``c``: ``(range_constraints, Dim.AUTO leaves to make
    static, Dim.AUTO leaves to express by other sizes: leaf -> expression, runtime
    assertions: (guard, text))``; raises `ConstraintViolationError` for a declared dimension
    the program does not allow over its whole range."""
    vars_, of_leaf = _variables(c)
    base = {k: v.example for k, v in vars_.items()}
    auto_static, replacements = set(), {}
    errors, violated, seen = [], [], set()
    narrowed, specialised = {}, set()
    asserts = []
    # assumptions first (ember._check on a value read from an input): they narrow its range
    guards = [g for g in c.guards if len(g) > 4] + [g for g in c.guards if len(g) == 4]
    for guard in guards:
        op, lhs, rhs, result = guard[:4]
        if type(lhs) is not tuple or (type(rhs) is not tuple and type(rhs) is not int):
            continue
        if len(guard) > 4:
            g = (op if result else _NEGATE[op], lhs, rhs, True)
            involved = {of_leaf[lf][0].key: of_leaf[lf][0]
                        for lf in _leaves(lhs, set()) | _leaves(rhs, set()) if lf in of_leaf}
            if any(v.unbacked for v in involved.values()):
                asserts.append((g, f"{_text(g[1], c, of_leaf)} {g[0]} "
                                   f"{_text(g[2], c, of_leaf)}"))
                if len(involved) == 1:
                    (var,) = involved.values()
                    var.lo, var.hi = _interval(g, var, base, c, of_leaf)
                seen.add(g)
                continue
        raw = _leaves(lhs, set()) | _leaves(rhs, set())
        for lf in list(raw):
            if lf in c.replacements:
                _leaves(c.replacements[lf], raw)
        leaves = {lf for lf in raw if lf in of_leaf}
        if not leaves:
            continue
        g = (op if result else _NEGATE[op], lhs, rhs, True)
        if g in seen:
            continue
        seen.add(g)
        # sorted: the messages (which dim to tie to which) read the same in every process
        involved = {of_leaf[lf][0].key: of_leaf[lf][0] for lf in sorted(leaves, key=repr)}
        bad = None
        for var in involved.values():
            for x in _candidates(var):
                values = dict(base)
                values[var.key] = x
                if not _holds(g, _env(c, of_leaf, values)):
                    bad = var
                    break
            if bad is not None:
                break
        if bad is None:
            continue
        text = f"{_text(g[1], c, of_leaf)} {g[0]} {_text(g[2], c, of_leaf)}"
        if any(v.unbacked for v in involved.values()):
            # what the program assumed of a value read from an input: checked when it runs
            asserts.append((g, text))
            continue
        if len(involved) == 1:
            var = bad
            lo, hi = _interval(g, var, base, c, of_leaf)
            if lo == hi:
                if var.auto:
                    auto_static.update(var.leaves)
                    continue
                if var.key in specialised:
                    continue
                specialised.add(var.key)
                violated.append(var.name)
                errors.append(
                    f"  - Not all values of {var.name} in the specified range "
                    f"{_range_text(var)} satisfy the generated guard {text}: the program "
                    f"specializes {var.name} to {var.example}.\n    Suggested fix: "
                    f"{var.name} = {var.example}   (or Dim.STATIC for that dimension)")
            else:
                if var.auto:
                    var.lo, var.hi = max(var.lo, lo), min(var.hi, hi)
                    continue
                # one suggestion per dim: the range every such guard allows
                prev = narrowed.get(var.key)
                if prev is None:
                    violated.append(var.name)
                    narrowed[var.key] = [var, lo, hi, [text]]
                else:
                    prev[1], prev[2] = max(prev[1], lo), min(prev[2], hi)
                    prev[3].append(text)
        else:
            autos = [v for v in involved.values() if v.auto]
            # Dim.AUTO/DYNAMIC: an equality ties a size to the others (y's dim is x's, z's
            # is x's times y's); any other relation makes the auto dims static
            if g[0] == "==" and _single_auto_leaf(g[1], of_leaf) and \
                    g[1] not in _leaves(g[2], set()):
                replacements[g[1]] = g[2]
                continue
            if g[0] == "==" and _single_auto_leaf(g[2], of_leaf) and \
                    g[2] not in _leaves(g[1], set()):
                replacements[g[2]] = g[1]
                continue
            if autos:
                for v in autos:
                    auto_static.update(v.leaves)
                continue
            names = [v.name for v in involved.values()]
            violated.extend(names)
            if g[0] == "==" and len(names) == 2:
                errors.append(
                    f"  - The values of {names[1]} and {names[0]} must always be equal "
                    f"(guard {text}).\n    Suggested fix: {names[1]} = {names[0]}")
            else:
                errors.append(f"  - The program assumes {text}, which does not hold for every "
                              f"value of {', '.join(names)} in their ranges.")
    for var, lo, hi, texts in narrowed.values():
        if var.key in specialised:
            continue   # the specialisation is the fix; a narrower range would not be
        errors.append(
            f"  - Not all values of {var.name} in the specified range {_range_text(var)} "
            f"satisfy the generated guard{'s' if len(texts) > 1 else ''} "
            f"{', '.join(texts)}.\n    Suggested fix: {var.name} = Dim({var.name!r}"
            + (f", min={lo}" if lo > var.lo or lo > 0 else "")
            + (f", max={hi}" if hi < INT_OO else "") + ")")
    if errors:
        raise ConstraintViolationError("Constraints violated (" + ", ".join(dict.fromkeys(violated))
                        + ")! For more information, run with TORCH_LOGS=\"+dynamic\".\n"
                        + "\n".join(errors))
    ranges = {}
    for var in vars_.values():
        if var.symbol is not None and not (var.auto and set(var.leaves) <= auto_static):
            ranges[var.symbol] = ValueRanges(_lower(var), var.hi)
    return ranges, auto_static, replacements, asserts


def _lower(var):
    return var.lo if var.declared_lo is None else var.declared_lo


def _range_text(var):
    hi = "int_oo" if var.hi >= INT_OO else var.hi
    return f"{_lower(var)} <= {var.name} <= {hi}"
