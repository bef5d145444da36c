"""The steps of values read from inputs: ``item_at`` (an integer read from a tensor, which
binds an unbacked size symbol such as ``u0``) and ``assert_size`` (what the exported
program assumed of such a value, checked on every call)."""
import operator

import numpy as np

__all__ = ["VALUE_STEPS"]

_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne}


def _item_at(dt, x, index):
    x = np.asarray(x)
    if x.dtype.kind not in "iub":
        raise TypeError(f"item_at reads an integer, got a {x.dtype.name} tensor")
    return int(x.reshape(-1)[int(index)])


def _assert_size(dt, lhs, op, rhs, message):
    compare = _COMPARE.get(op)
    if compare is None:
        raise ValueError(f"assert_size: unknown comparison {op!r}")
    if not compare(int(lhs), int(rhs)):
        raise RuntimeError(f"Runtime assertion failed for expression {message}: got {lhs} "
                           f"{op} {rhs} false")
    return None


VALUE_STEPS = {"item_at": _item_at, "assert_size": _assert_size}
