"""``ember._check`` and its family: torch's Python spelling of ``TORCH_CHECK``.

Each raises its error type when ``cond`` is False: ``_check`` RuntimeError,
``_check_index`` IndexError, ``_check_value`` ValueError, ``_check_type`` TypeError,
``_check_not_implemented`` NotImplementedError, ``_check_with`` the type it is given.
``cond`` is a Python bool (a comparison of sizes is one: ember's symbolic sizes are
ints); ``message`` is a callable returning the text, evaluated only on failure.  Under
``ember.compile`` and ``ember.export`` a size comparison is an ordinary bool computed
from the example's sizes, so a check holds for the traced call as it does eagerly.
"""
import warnings

import numpy as np

from .overrides import overridable
from .tensor import Tensor

__all__ = ["_assert", "_check", "_check_with", "_check_is_size", "_check_index",
           "_check_value", "_check_type", "_check_not_implemented", "_check_tensor_all",
           "_check_tensor_all_with"]

# called after each check that holds: ember.export takes the comparison just made (of a
# symbolic size) as an assumption of the program rather than a guard
CHECK_HOOKS = []

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be "
                    "improved? If so, please report an enhancement request to PyTorch.)")


@overridable
def _assert(condition, message):
    """Python's ``assert condition, message``, as a call that fx can record (a Proxy
    condition dispatches through ``__torch_function__``), as ``torch._assert``."""
    assert condition, message


def _check_with(error_type, cond, message):
    """Raise ``error_type(message())`` unless ``cond`` is True."""
    if not isinstance(cond, (bool, np.bool_)):
        if isinstance(cond, Tensor):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                            "torch._check_tensor_all() to assert that all elements are true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        for hook in CHECK_HOOKS:
            hook()
        return
    if not (isinstance(error_type, type) and issubclass(error_type, Exception)) or \
            issubclass(error_type, Warning):
        raise AssertionError(f"error_type must be a subclass of Exception but not Warning, "
                             f"got {error_type}")
    if message is None:
        text = _DEFAULT_MESSAGE
    elif not callable(message):
        raise TypeError("message must be a callable")
    else:
        text = str(message())
    raise error_type(text)


def _check(cond, message=None):
    r"""Throws error containing an optional message if the specified condition is False.

    Error type: ``RuntimeError``

    Args:
        cond (:class:`bool`): If False, throw error
        message (Callable, optional): Callable that returns either a string or an object
            that has a ``__str__()`` method to be used as the error message. Default: ``None``
    """
    _check_with(RuntimeError, cond, message)


def _check_is_size(i, message=None, *, max=None):
    """Checks that a given integer is a valid size (i.e., is non-negative), and at most
    ``max`` when given.  Deprecated in torch (``_check(i >= 0)`` instead): warns as torch
    does."""
    warnings.warn("_check_is_size will be removed in a future PyTorch release along with "
                  "guard_size_oblivious.     Use _check(i >= 0) instead.", FutureWarning,
                  stacklevel=2)
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _check_index(cond, message=None):
    r"""Throws error containing an optional message if the specified condition is False.

    Error type: ``IndexError``"""
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    r"""Throws error containing an optional message if the specified condition is False.

    Error type: ``ValueError``"""
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    r"""Throws error containing an optional message if the specified condition is False.

    Error type: ``TypeError``"""
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    r"""Throws error containing an optional message if the specified condition is False.

    Error type: ``NotImplementedError``"""
    _check_with(NotImplementedError, cond, message)


def _check_tensor_all_with(error_type, cond, message=None):
    """Raise ``error_type`` unless every element of bool tensor ``cond`` is True."""
    if not isinstance(cond, Tensor):
        raise TypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond.dtype.name != "bool":
        raise TypeError(f"cond tensor must have dtype torch.bool, but got {cond.dtype}")
    _check_with(error_type, bool(cond.all().item()), message)


def _check_tensor_all(cond, message=None):
    r"""Throws error containing an optional message if any element of ``cond`` (a bool
    Tensor) is False.

    Error type: ``RuntimeError``"""
    _check_tensor_all_with(RuntimeError, cond, message)
