"""Number arguments as torch's argument parser reads them.

torch's ``Scalar``/``Number`` parameters (``alpha``, ``value``, ``fill_value``) take a Python
number, a NumPy scalar, or a 0-dim tensor that does not require grad (read as its value).
A tensor with more dimensions, even of one element, or one that requires grad is a TypeError
naming the function and argument: a value with history would silently lose its gradient.
"""
from .tensor import Tensor


def number_arg(value, fn, arg, position=None):
    """``value`` as a number for argument ``arg`` of ``fn``; torch's TypeError for a tensor
    that is not a 0-dim tensor without grad.  ``position`` (1-based) is named as torch does
    for positional parameters."""
    if not isinstance(value, Tensor):
        return value
    if value.ndim != 0 or value.requires_grad:
        where = f" (position {position})" if position is not None else ""
        raise TypeError(f"{fn}(): argument '{arg}'{where} must be Number, not Tensor")
    return value.item()
