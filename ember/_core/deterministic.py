"""The deterministic-algorithms switches (``use_deterministic_algorithms`` and
``ember.utils.deterministic.fill_uninitialized_memory``) and what they change here.

One process-wide dict, as torch keeps them in its global context.  With both on, memory a
factory hands out uninitialised (``empty``, ``empty_like``, ``empty_strided``, ``new_empty``,
the new elements of ``resize_``) is filled as torch fills it: NaN for floating and complex
dtypes, the largest value for integers, True for bool, so results never depend on stale
memory.
"""
import numpy as np

__all__ = ["DETERMINISTIC", "fill_uninitialized"]

DETERMINISTIC = {"mode": False, "warn_only": False, "fill_uninitialized_memory": True}


def fill_uninitialized(arr):
    """Fill ``arr`` (fresh, uninitialised memory) in place when the switches ask for it."""
    if DETERMINISTIC["mode"] and DETERMINISTIC["fill_uninitialized_memory"] and arr.size:
        dt = arr.dtype
        if dt.kind in "iu":
            arr.fill(np.iinfo(dt).max)
        elif dt.kind == "b":
            arr.fill(True)
        else:  # floating, complex and the ml_dtypes floats
            arr.fill(np.nan)
    return arr
