"""Running a lite program through C: `_cgen`'s source built once with `ember_lite._build`
(the same cached, verified builder as ember's kernels), NumPy's OpenBLAS installed, and one
ctypes call per program call.  `prepare` says why not when it cannot: no C compiler, a
failed build, ``EMBER_LITE_C=0``, a graph outside the generator's subset, or a NumPy whose
BLAS is not its own OpenBLAS (for a graph with products); the program then runs on NumPy."""
import ctypes
import os

import numpy as np

from . import _build, _cblas, _cgen
from .kernels._blas import threads_for

__all__ = ["prepare", "ENV"]

ENV = "EMBER_LITE_C"
_OPT = ("-O3", "-fno-trapping-math")
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
    if os.environ.get(ENV, "1") == "0":
        return None, {"reason": f"disabled by {ENV}=0"}
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


class _Runner:
    def __init__(self, cp, entry, lib):
        self.cp, self.entry, self.lib = cp, entry, lib
        self.ins = (ctypes.c_void_p * max(len(cp.inputs), 1))()
        self.outs = (ctypes.c_void_p * max(len(cp.outputs), 1))()
        self.tables = {k: v for k, (kind, v) in enumerate(cp.inputs) if kind == "table"}
        for k, t in self.tables.items():
            self.ins[k] = t.ctypes.data
        self.slots = [(k, v) for k, (kind, v) in enumerate(cp.inputs) if kind == "placeholder"]
        self.dtypes = [np.dtype(d) for _, d in cp.outputs]

    def __call__(self, env, syms):
        cp = self.cp
        keep = []
        for k, name in self.slots:
            a = env[name]
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
                keep.append(a)
            self.ins[k] = a.ctypes.data
        outs = []
        for k, ((shape, _), dt) in enumerate(zip(cp.outputs, self.dtypes)):
            o = np.empty(_cgen.eval_sizes(shape, syms), dt)
            outs.append(o)
            self.outs[k] = o.ctypes.data
        sym = (ctypes.c_int64 * max(len(cp.symbols), 1))(*(syms[s] for s in cp.symbols))
        macs = max((int(np.prod(_cgen.eval_sizes(m, syms))) for m in cp.matmuls), default=0)
        with threads_for(macs):
            rc = self.entry(self.ins, self.outs, sym)
        if rc == 1:
            raise MemoryError("ember_lite: the C program could not allocate its buffers")
        return outs if rc == 0 else None
