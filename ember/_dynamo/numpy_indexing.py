"""Indexing and assignment of `NumpyArray`s, and ``astype``, as ember ops.

NumPy's index forms map to ember's (which follows NumPy's advanced indexing); integers
next to array indices become 1-element arrays, as NumPy places them; a negative-step slice
or a boolean scalar runs in NumPy.  A result NumPy would give as a scalar (all integer
indices) is marked so.
"""
import operator

import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Tensor
from .numpy_array import NumpyArray
from .numpy_operands import (Fallback, EMBER_ERRORS, OUR_ERRORS, supported, from_real, arr,
                             rank_of, cast, real_array, to_real, fallback, ember)
from .session import current_session

__all__ = ["getitem", "setitem", "astype"]


# ---- indexing ------------------------------------------------------------------------
def _index(index):
    """NumPy index ``index`` as ember's, or Fallback."""
    items = index if type(index) is tuple else (index,)
    out = []
    for i in items:
        if type(i) is NumpyArray:
            out.append(i._t)
        elif type(i) is np.ndarray:
            out.append(from_real(i))
        elif type(i) is bool or isinstance(i, np.bool_):
            raise Fallback("a boolean scalar index")
        elif isinstance(i, (int, np.integer)):
            out.append(operator.index(i))
        elif isinstance(i, slice):
            start, stop, step = (None if v is None else operator.index(v)
                                 for v in (i.start, i.stop, i.step))
            if step is not None and step < 0:
                raise Fallback("a slice with a negative step")
            out.append(slice(start, stop, step))
        elif i is None or i is Ellipsis:
            out.append(i)
        elif type(i) is list:
            out.append(from_real(np.asarray(i)))
        else:
            raise Fallback(f"an index of type {type(i).__name__}")
    if len(out) > 1 and any(isinstance(i, Tensor) and rank_of(i) for i in out) and \
            any(type(i) is int for i in out):
        # with an array among the indices NumPy treats integers as arrays too: they take
        # part in the advanced-index placement rule (torch's select does not).  A 1-element
        # index broadcasts away against the others.
        out = [ember.full((1,), i, dtype=_dt.int64) if type(i) is int else i for i in out]
    return tuple(out) if type(index) is tuple else out[0], any(i is Ellipsis for i in items)


def getitem(a, index):
    try:
        idx, ellipsis = _index(index)
        r = a._t[idx]
        return NumpyArray(r, rank_of(r) == 0 and not ellipsis)
    except Fallback as e:
        reason = f"indexing with {e}"
    except OUR_ERRORS:
        raise
    except EMBER_ERRORS as e:
        reason = f"indexing: ember raised {type(e).__name__}: {e}"
    return fallback(operator.getitem, (a, index), {}, reason)


def setitem(a, index, value):
    try:
        idx, _ = _index(index)
        if type(value) in (int, float, bool) and a.dtype.kind != "c" and \
                not (type(value) is float and a.dtype.kind in "biu"):
            v = value
        else:
            v = cast(arr(value)._t, a.dtype)
        a._t[idx] = v
        return
    except Fallback as e:
        reason = f"an assignment with {e}"
    except OUR_ERRORS:
        raise
    except EMBER_ERRORS as e:
        reason = f"an assignment: ember raised {type(e).__name__}: {e}"
    s = current_session()
    if s is not None:
        s.graph_break(reason)
    real_array(a)[to_real(index)] = to_real(value)


def astype(a, dtype, casting="unsafe", copy=True):
    dtype = np.dtype(dtype)
    if not supported(dtype) or casting != "unsafe" and not np.can_cast(a.dtype, dtype,
                                                                         casting):
        return fallback(lambda x: x.astype(dtype, casting=casting, copy=copy), (a,), {},
                         f"astype to {dtype} (casting={casting!r})")
    if dtype == a.dtype:
        return NumpyArray(ember.clone(a._t), a.scalar) if copy else a
    return NumpyArray(cast(a._t, dtype), a.scalar)
