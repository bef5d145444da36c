"""Generate NumPy code for the kernels of a schedule: the path with no C compiler.

Each `ir.Kernel` becomes one Python function with the same arguments as its C twin
(buffers as arrays, sizes, scalar inputs): every load is a strided view of its buffer
broadcast over the kernel's space, expressions are the scalar-function table's NumPy
forms in the same compute dtypes, reductions keep their dims, and stores write views of
the output buffers.  Same fusion groups, same results, never an error for lack of C."""
import math

from .. import ir
from .. import sizes as _sizes
from .c_kernels import kernel_args

__all__ = ["kernel_source", "RUNTIME"]


def _tup(items):
    items = list(items)
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


class _Gen:
    def __init__(self, kernel):
        self.k = kernel
        self.lines = []
        self.names = {}
        self.n = 0
        self.nd = len(kernel.space)
        self.space = [_sizes.py_text(d) for d in kernel.space]
        self.axes = tuple(d for d, r in enumerate(kernel.reduced) if r)

    def aff(self, a):
        return (_tup(_sizes.py_text(c) for c in a.coeffs), _sizes.py_text(a.offset))

    def val(self, e):
        hit = self.names.get(e)
        if hit is not None:
            return hit
        if isinstance(e, ir.Load):
            co, off = self.aff(e.index)
            t = f"_load({e.buf}, {co}, {off}, _SPACE, _dt({e.dtype!r}))"
        elif isinstance(e, ir.Const):
            v = e.value
            text = f"float({str(v)!r})" if isinstance(v, float) and not math.isfinite(v) \
                else repr(v)
            t = f"_const({text}, _dt({e.dtype!r}), {self.nd})"
        elif isinstance(e, ir.SizeValue):
            t = f"_const({_sizes.py_text(e.size)}, _dt({e.dtype!r}), {self.nd})"
        elif isinstance(e, ir.ScalarArg):
            t = f"_const({e.name}, _dt({e.dtype!r}), {self.nd})"
        elif isinstance(e, ir.Iota):
            co, off = self.aff(e.index)
            t = f"_iota({co}, {off}, _SPACE, {e.start!r}, {e.step!r}, _dt({e.dtype!r}))"
        elif isinstance(e, ir.Apply):
            args = ", ".join(self.val(a) for a in e.args)
            t = f"_apply({e.fn!r}, _dt({e.dtype!r}), {args})"
        elif isinstance(e, ir.Cast):
            t = f"_cast({self.val(e.x)}, _dt({e.dtype!r}), {e.round_to!r})"
        elif isinstance(e, ir.Reduce):
            t = f"_reduce({e.kind!r}, {self.val(e.x)}, {self.axes!r}, _SPACE, _dt({e.dtype!r}))"
        else:
            raise TypeError(f"internal error: no NumPy form for IR node {type(e).__name__}")
        self.n += 1
        v = f"t{self.n}"
        self.lines.append(f"{v} = {t}")
        self.names[e] = v
        return v

    def source(self, symbols):
        params = [n for n, kind in kernel_args(self.k, symbols) if kind != "nt"]
        head = [f"def {self.k.name}({', '.join(params)}, nt=1):",
                f"    _SPACE = {_tup(self.space)}"]
        for s in self.k.stores:
            v = self.val(s.value)
            co, off = self.aff(s.index)
            self.lines.append(f"_store({s.buf}, {co}, {off}, _SPACE, {v})")
        return "\n".join(head + ["    " + ln for ln in self.lines]) + "\n"


def kernel_source(kernel, symbols):
    return _Gen(kernel).source(symbols)


RUNTIME = '''
import numpy as _np
from numpy.lib.stride_tricks import as_strided as _as_strided
from ember._core import dtype as _edt
from ember._core import scalar_functions as _sf


def _dt(name):
    return getattr(_edt, name).np


def _view(buf, coeffs, offset, space):
    flat = buf.reshape(-1)
    shape = tuple(s if c != 0 else 1 for s, c in zip(space, coeffs))
    item = flat.itemsize
    base = flat[offset:] if flat.size else flat
    return _as_strided(base, shape=shape, strides=tuple(c * item for c in coeffs),
                       writeable=True)


def _load(buf, coeffs, offset, space, dtype):
    return _view(buf, coeffs, offset, space).astype(dtype, copy=False)


def _const(v, dtype, nd):
    return _np.asarray(v).astype(dtype).reshape((1,) * nd)


def _iota(coeffs, offset, space, start, step, dtype):
    idx = _np.asarray(offset, dtype=_np.int64).reshape((1,) * len(space))
    for d, (c, s) in enumerate(zip(coeffs, space)):
        if c != 0:
            shape = [1] * len(space)
            shape[d] = s
            idx = idx + c * _np.arange(s, dtype=_np.int64).reshape(shape)
    if _np.dtype(dtype).kind == "f":
        return (start + step * idx.astype(_np.float64)).astype(dtype)
    return (int(start) + int(step) * idx).astype(dtype)


def _apply(fn, dtype, *args):
    with _np.errstate(all="ignore"):
        r = _sf.get(fn).numpy(_np, *args)
    return _np.asarray(r).astype(dtype, copy=False)


def _cast(x, dtype, round_to):
    if round_to is not None:
        x = x.astype(_dt(round_to))
    return x.astype(dtype)


def _reduce(kind, x, axes, space, dtype):
    shape = tuple(space[d] if d in axes else x.shape[d] for d in range(len(space)))
    x = _np.broadcast_to(x, shape)
    with _np.errstate(all="ignore"):
        if kind == "sum":
            return _np.sum(x, axis=axes, keepdims=True, dtype=dtype)
        if kind == "prod":
            return _np.prod(x, axis=axes, keepdims=True, dtype=dtype)
        if kind == "amax":
            return _np.max(x, axis=axes, keepdims=True)
        if kind == "amin":
            return _np.min(x, axis=axes, keepdims=True)
        if kind == "any":
            return _np.any(x, axis=axes, keepdims=True)
        return _np.all(x, axis=axes, keepdims=True)


def _store(buf, coeffs, offset, space, value):
    if buf.size == 0:
        return
    _np.copyto(_view(buf, coeffs, offset, space), value, casting="unsafe")
'''
