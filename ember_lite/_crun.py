"""Running a lite program through C: `_cgen`'s source built once with `ember_lite._build`
(the same cached, verified builder as ember's kernels), NumPy's OpenBLAS installed, and one
ctypes call per program call.  `prepare` says why not when it cannot: no C compiler, a
failed build, a graph outside the generator's subset, or a NumPy whose BLAS is not its own
OpenBLAS (for a graph with products); the program then runs on NumPy (as with
``EMBER_LITE_C=0``, which `ember_lite._program` checks before importing this module)."""
import ctypes
import math

import numpy as np

from . import _build, _cblas, _cgen
from ._format import eval_size
from .kernels._blas import threads_for

__all__ = ["prepare"]

_OPT = ("-O3", "-fno-trapping-math", "-fwrapv", "-pthread")  # -fwrapv: integers wrap, as
# torch's; -pthread: the per-thread arena's destructor
# -march=native is safe in the cache: the key holds this CPU's model and flags
_VARIANTS = [(_OPT + ("-march=native",) + _build.BASE_FLAGS + _build.FALLBACK_FLAGS, {}),
             (_OPT + _build.BASE_FLAGS + _build.FALLBACK_FLAGS, {})]


def _check(lib):
    return lib.lite_abi() == _cgen.ABI


def prepare(nodes, ctx):
    """``(runner, info)``: a callable ``runner(env, syms) -> outputs or None`` (None: this
    call's sizes failed the entry's checks, run NumPy) and the build's info, or ``(None,
    {"reason": why})``.  The caller has checked that each weight matches its placeholder's
    recorded dtype and shape (user inputs are checked on every call)."""
    cp, why = _cgen.generate(nodes, ctx)
    if cp is None:
        return None, {"reason": f"the graph is outside the C generator's subset ({why})"}
    pointers = None
    if cp.uses_blas:
        pointers = _cblas.numpy_pointers()
        if pointers is None:
            return None, {"reason": "NumPy's BLAS is not the OpenBLAS of its wheel (the C "
                                    "code calls that one)"}
    lib, info, err = _build.attempt(_build.build, "ember_lite_program", cp.source, _check,
                                    _VARIANTS, "lite")
    if lib is None:
        return None, {"reason": err}
    if pointers is not None:
        _cblas.install(lib, pointers)
    entry = lib.lite_entry
    entry.restype = ctypes.c_int
    entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return _Runner(cp, entry, lib), dict(info, reason=None)


def _size_fn(e):
    """``f(syms)`` giving size ``e`` (an int, a symbol or an expression): a call pays one
    lookup for the usual bare symbol."""
    if type(e) is int:
        return lambda syms: e
    if e.isidentifier():
        return lambda syms: syms[e]
    return lambda syms: eval_size(e, syms)


class _Runner:
    """One program's C entry.  Thread-safe: each call has its own pointer arrays, and the
    entry's arena is per thread."""

    def __init__(self, cp, entry, lib):
        self.cp, self.entry, self.lib = cp, entry, lib
        self.in_array = ctypes.c_void_p * max(len(cp.inputs), 1)
        self.out_array = ctypes.c_void_p * max(len(cp.outputs), 1)
        self.sym = ctypes.c_int64 * max(len(cp.symbols), 1)
        self.base = [v.ctypes.data if kind == "table" else None for kind, v in cp.inputs]
        self.slots = [(k, v) for k, (kind, v) in enumerate(cp.inputs) if kind == "placeholder"]
        # (array, its address) per slot: weights keep their arrays from call to call
        self.seen = [(None, None)] * len(self.slots)
        # what the C assumes of each input: a weight replaced by a buffer mutation must
        # still match (user inputs are checked against the same metadata by the caller)
        self.expect = [cp.placeholders[v] for _, v in self.slots]
        self.out_shapes = [([_size_fn(e) for e in shape], np.dtype(d))
                           for shape, d in cp.outputs]
        self.macs = [[_size_fn(e) for e in m] for m in cp.matmuls]

    def __call__(self, env, syms):
        ptrs = list(self.base)
        keep = []   # contiguous copies, alive until the call returns
        for j, (k, name) in enumerate(self.slots):
            a = env[name]
            known, address = self.seen[j]
            if a is not known:
                dtype, shape = self.expect[j]
                if a.dtype != dtype or (shape is not None and a.shape != shape):
                    return None
                if not a.flags.c_contiguous:
                    a = np.ascontiguousarray(a)
                    keep.append(a)
                    address = a.ctypes.data
                else:
                    address = a.ctypes.data
                    self.seen[j] = (a, address)
            ptrs[k] = address
        outs = [np.empty([f(syms) for f in shape], dt) for shape, dt in self.out_shapes]
        sym = self.sym(*(syms[s] for s in self.cp.symbols))
        macs = max((math.prod(f(syms) for f in m) for m in self.macs), default=0)
        with threads_for(macs):
            rc = self.entry(self.in_array(*ptrs), self.out_array(*(o.ctypes.data for o in outs)),
                            sym)
        if rc == 1:
            raise MemoryError("ember_lite: the C program could not allocate its buffers")
        return outs if rc == 0 else None
