"""Does the captured graph hold at other sizes?  Capture again and compare.

Guards catch what the program compares, but a size can also shape a program silently: a
Python loop over ``range(x.shape[1])`` unrolls to the example's length, ``int(size)`` or a
NumPy shape turns a symbol into a number.  So each dynamic dimension is checked the way
ember.compile generalises (two traces must agree up to sizes): the program is captured
again with that dimension one larger (or smaller, at the top of its range), on inputs made
from the examples by repeating their last slice, and the two graphs must be the same code.
A ``Dim.AUTO`` dimension that fails becomes static; a declared one is an error with the
suggested fix.
"""
import numpy as np


from .._dynamo.exc import UserError
from ..fx.experimental.symbolic_shapes import ConstraintViolationError
from .guards import _eval, _variables

__all__ = ["dims_that_do_not_generalise"]


def _resized(t, sizes):
    """``t`` with dimension ``d`` of size ``sizes[d]``: cut, or grown by repeating its last
    slice (integer inputs keep values in their range)."""
    a = t.detach().numpy()
    for d, n in sizes.items():
        cur = a.shape[d]
        a = np.take(a, np.minimum(np.arange(n), cur - 1), axis=d)
    from .._core.tensor import wrap
    return wrap(np.ascontiguousarray(a))


def _perturbed_inputs(c, var, of_leaf, new_value):
    env = dict(c.leaf_values)
    for lf, (v, a, b) in of_leaf.items():
        env[lf] = a * (new_value if v is var else v.example) + b
    for lf, expr in c.replacements.items():
        env[lf] = _eval(expr, env)
    by_input = {}
    for lf, val in env.items():
        if lf[0] == "a" and val != c.leaf_values[lf]:
            by_input.setdefault(lf[1], {})[lf[2]] = val
    flat = list(c.flat_inputs)
    for a, sizes in by_input.items():
        pos = c.arg_of_leaf[a]
        if any(n < 1 for n in sizes.values()):
            return None
        flat[pos] = _resized(flat[pos], sizes)
    return flat


def _same_constants(a, b):
    """Whether two captures lifted the same constant tensors (a constant computed from a
    size, such as the index list of ``combinations``, differs at another size)."""
    if a.constants.keys() != b.constants.keys():
        return False
    for k, x in a.constants.items():
        y = b.constants[k]
        if tuple(x.shape) != tuple(y.shape) or x.dtype != y.dtype or \
                not np.array_equal(np.asarray(x._data), np.asarray(y._data), equal_nan=True):
            return False
    return True


def dims_that_do_not_generalise(c, recapture):
    """The `_Var`s of capture ``c`` whose graph changes with their size; ``recapture(flat)``
    captures again on the flattened inputs ``flat`` and returns the new capture."""
    vars_, of_leaf = _variables(c)
    bad = []
    for var in vars_.values():
        if var.unbacked or not var.leaves:
            continue
        step = 1 if var.example + 1 <= var.hi else -1
        new_value = var.example + step
        if new_value < var.lo:
            continue   # a one-value range: nothing to generalise
        flat = _perturbed_inputs(c, var, of_leaf, new_value)
        if flat is None:
            continue
        try:
            other = recapture(flat)
            same = other.gm.code == c.gm.code and _same_constants(c, other)
        except (UserError, ConstraintViolationError, RuntimeError, ValueError, IndexError):
            same = False
        if not same:
            bad.append(var)
    return bad



