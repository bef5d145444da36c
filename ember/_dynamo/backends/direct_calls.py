"""The NumPy call an elementwise kernel makes, found once, for the "eager" backend.

An elementwise op's kernel is a dtype wrapper (`ember.ops._helpers.unary_float`,
``unary_same``, ``binary_kernel``, the activations' ``_float_kernel``, add/sub's alpha
wrapper) around the scalar-function table's NumPy formula: per call it checks the input
dtypes, then calls the formula.  In a captured graph the dtypes are known when the graph
is built (they are part of its key), so for inputs that all have one float dtype
(float32/float64) and weak Python numbers, the wrapper's checks always end in the plain
formula call.  When that formula is exactly one NumPy ufunc call on its operands
(``xp.multiply(a, b)``, ``xp.maximum(x, 0)``: found by running it once on stand-ins), the
graph calls that ufunc itself, with weak Python numbers made scalars of the dtype (the
value NumPy's promotion, NEP 50, converts them to): the same arithmetic, without the
wrapper's checks and the formula's call.

`direct_call` answers for one graph node; None means the node calls its kernel.
"""
import numpy as np

from ...fx.node import Node

__all__ = ["direct_call"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_CODES = None


def _wrapper_codes():
    """Code objects of the wrapper kernels: (unary ones, binary, alpha wrapper)."""
    global _CODES
    if _CODES is None:
        from ...ops._helpers import binary_kernel, unary_float, unary_same
        from ...ops.nn.activation import _float_kernel
        from ...ops.pointwise import _alpha_kernel
        unary = {unary_float(None).__code__, unary_same(None).__code__,
                 _float_kernel("probe", None).__code__}
        _CODES = (unary, binary_kernel(None).__code__,
                  _alpha_kernel(lambda xp, a, b: a).__code__)
    return _CODES


def _cell(fn, name):
    code = fn.__code__
    return fn.__closure__[code.co_freevars.index(name)].cell_contents


def _formula(kernel, n_operands):
    """The formula ``kernel`` calls for float operands of one dtype, or None."""
    unary, binary, alpha = _wrapper_codes()
    code = getattr(kernel, "__code__", None)
    if code is alpha:  # add/sub without alpha: its checks concern bool operands only
        kernel = _cell(kernel, "base")
        code = kernel.__code__
    if (code in unary and n_operands == 1) or (code is binary and n_operands == 2):
        return _cell(kernel, "fn")
    return None


_RESULT = object()


class _ProbeNamespace:
    """An ``xp`` that records the one ufunc call a formula makes."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        f = getattr(np, name, None)
        if not isinstance(f, np.ufunc):
            raise AttributeError(name)

        def record(*args, **kwargs):
            self.calls.append((f, args, kwargs))
            return _RESULT
        return record


_THIN = {}


def _thin_ufunc(fn, n):
    """(ufunc, template) when ``fn(xp, *operands)`` is exactly ``xp.<ufunc>(...)`` on its
    operands and number constants; template items: operand index or ("c", number)."""
    key = (fn, n)
    if key in _THIN:
        return _THIN[key]
    xp = _ProbeNamespace()
    stand_ins = [object() for _ in range(n)]
    out = None
    try:
        r = fn(xp, *stand_ins)
    except Exception:  # noqa: BLE001 - not a plain ufunc formula
        r = None
    if r is _RESULT and len(xp.calls) == 1 and not xp.calls[0][2]:
        ufunc, args, _ = xp.calls[0]
        template = []
        for a in args:
            idx = next((i for i, s in enumerate(stand_ins) if a is s), None)
            if idx is not None:
                template.append(idx)
            elif type(a) in (int, float):
                template.append(("c", a))
            else:
                template = None
                break
        if template is not None and sorted(t for t in template if type(t) is int) == \
                list(range(n)):
            out = (ufunc, tuple(template))
    _THIN[key] = out
    return out


def _weak(v, dt):
    """A weak Python number as NumPy would convert it next to a ``dt`` array, or None.
    Returned as a 0-d array: a ufunc takes one about twice as fast as a NumPy scalar,
    which it converts to an array on every call (0.25 against 0.56 us on 16 floats)."""
    if type(v) is float or type(v) is int and abs(v) < 2 ** 24:
        s = dt.type(v)
        if np.isfinite(s) or not np.isfinite(v):
            return np.array(s)
    return None


def direct_call(node, names, consts):
    """Source of the direct call for op node ``node`` (see the module docstring), or
    None; ``names``: node -> expression, ``consts``: the generated code's globals."""
    op = node.target
    if node.kwargs or op.n_out != 1:
        return None
    val = node.meta.get("val")
    dt = getattr(getattr(val, "dtype", None), "np", None)
    if dt not in _FLOATS or not getattr(val, "shape", ()):
        return None  # 0-d results: NumPy returns scalars, the kernel's wrapper arrays
    operands = []
    for a in node.args:
        if isinstance(a, Node):
            m = a.meta.get("val")
            if getattr(getattr(m, "dtype", None), "np", None) != dt:
                return None
            operands.append(names[a])
        else:
            s = _weak(a, dt)
            if s is None:
                return None
            c = f"_w{len(consts)}"
            consts[c] = s
            operands.append(c)
    if not any(isinstance(a, Node) for a in node.args):
        return None
    fn = _formula(op.kernel, len(operands))
    if fn is None:
        return None
    thin = _thin_ufunc(fn, len(operands))
    if thin is None:  # another formula may compute in another dtype: the wrapper casts
        return None
    ufunc, template = thin
    name = f"_u_{node.name}"
    consts[name] = ufunc
    args = []
    for t in template:
        if type(t) is int:
            args.append(operands[t])
        else:
            s = _weak(t[1], dt)
            if s is None:
                return None
            c = f"_w{len(consts)}"
            consts[c] = s
            args.append(c)
    return f"{name}({', '.join(args)})"
