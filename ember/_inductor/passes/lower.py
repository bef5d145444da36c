"""Lower one fused group of graph nodes to a `ir.Kernel`: each node becomes an expression
of the loop variables, its inputs inlined (recomputed at the index they are read at) up to
buffers, which are loaded.  Movement ops only transform the index."""
import numpy as np

from ..._core import scalar_functions as _sf
from .. import ir
from .. import sizes as _sizes
from .classify import compute_name, is_node, reduction_dims, scalar_compute

__all__ = ["Lowerer", "Unsupported", "node_index"]


class Unsupported(Exception):
    """The group cannot be one kernel; its nodes run their eager kernels instead."""


def _shape(node):
    return tuple(_sizes.size(d) for d in node.meta["val"].shape)


def _keys(shape):
    return tuple(_sizes.key(d) for d in shape)


def node_index(shape, space, reduced):
    """The index (one Affine per dim) at which a node of ``shape`` is stored in a kernel
    over ``space``: the whole space, or, for a reduction kernel, the space without its
    reduced dims (squeezed or kept as size 1); None when it fits neither."""
    nd = len(space)
    if _keys(shape) == _keys(space):
        return tuple(ir.Affine.var(d, nd) for d in range(nd))
    if not any(reduced):
        return None
    keep = [d for d in range(nd) if not reduced[d]]
    if _keys(shape) == _keys([space[d] for d in keep]):
        return tuple(ir.Affine.var(d, nd) for d in keep)
    kept = [1 if reduced[d] else space[d] for d in range(nd)]
    if _keys(shape) == _keys(kept):
        return tuple(ir.Affine.const(0, nd) if reduced[d] else ir.Affine.var(d, nd)
                     for d in range(nd))
    return None


def _c_value(v, dtype):
    if dtype == "bool":
        return bool(v)
    if dtype.startswith(("int", "uint")):
        return int(v)
    return float(v)


class Lowerer:
    """Builds the expressions of one kernel.

    ``buffer_of(node)`` names the buffer holding ``node``'s value when the kernel must load
    it (an input, a constant, or a node another step computes), else None (inline it);
    ``scalar_name(node)`` names a Python-scalar input."""

    def __init__(self, space, reduced, buffer_of, scalar_name):
        self.space = tuple(space)
        self.reduced = tuple(reduced)
        self.nd = len(space)
        self.buffer_of = buffer_of
        self.scalar_name = scalar_name
        self.memo = {}

    # ---- helpers -----------------------------------------------------------------------
    def _const_idx(self, c=0):
        return ir.Affine.const(c, self.nd)

    def cast(self, e, dtype):
        return e if e.dtype == dtype else ir.Cast(e, dtype)

    def broadcast_idx(self, in_shape, out_shape, idx):
        """The index into an input of ``in_shape`` broadcast to ``out_shape`` at ``idx``."""
        off = len(out_shape) - len(in_shape)
        if off < 0:
            raise Unsupported("broadcast to fewer dims")
        out = []
        for d, s in enumerate(in_shape):
            o = out_shape[off + d]
            if _sizes.key(s) == _sizes.key(o):
                out.append(idx[off + d])
            elif s == 1:
                out.append(self._const_idx())
            else:
                raise Unsupported(f"size {s} does not broadcast to {o}")
        return tuple(out)

    def scalar(self, v, dtype):
        """A Python number param: a constant, or a symbolic size read at run time."""
        s = _sizes.size(v) if getattr(v, "expr", None) is not None else None
        if isinstance(s, _sizes.Sym):
            return self.cast(ir.SizeValue(s, "int64"), dtype)
        return ir.Const(_c_value(v, dtype), dtype)

    def operand(self, a, out_shape, idx, dtype):
        if not is_node(a):
            return self.scalar(a, dtype)
        m = a.meta.get("val")
        if not hasattr(m, "shape"):  # a Python-scalar input
            kind = {bool: "bool", int: "int64"}.get(m, "float64")
            return self.cast(ir.ScalarArg(self.scalar_name(a), kind), dtype)
        e = self.expr(a, self.broadcast_idx(_shape(a), out_shape, idx))
        return self.cast(e, dtype)

    # ---- the node -> expression map ----------------------------------------------------
    def expr(self, node, idx):
        k = (node, idx)
        e = self.memo.get(k)
        if e is None:
            e = self.memo[k] = self._expr(node, tuple(idx))
        return e

    def _expr(self, node, idx):
        m = node.meta["val"]
        buf = self.buffer_of(node)
        if buf is not None:
            strides = _sizes.contiguous_strides(_shape(node))
            a = self._const_idx()
            for i, s in zip(idx, strides):
                a = a + i.scale(s)
            return ir.Load(buf, a, m.dtype.name, compute_name(m.dtype))
        op = node.target
        name = op.name
        out_shape = _shape(node)
        out_dt = compute_name(m.dtype)
        if op.lowering is not None and op.lowering.kind == "scalar":
            fn = op.lowering.detail
            comp = scalar_compute(node)
            args = list(node.args)
            if fn == "where":
                ops = [self.operand(args[0], out_shape, idx, "bool")] + \
                      [self.operand(a, out_shape, idx, comp) for a in args[1:]]
            else:
                ops = [self.operand(a, out_shape, idx, comp) for a in args]
            rule = _sf.get(fn).rule
            res_dt = "bool" if rule in ("compare", "predicate") else comp
            return self.cast(ir.Apply(fn, tuple(ops), res_dt), out_dt)
        if name in ("sum", "prod", "amax", "amin", "any", "all"):
            return self._reduce(node, idx, out_dt)
        x = node.args[0] if node.args else None
        if name == "_to_copy":
            e = self.expr(x, idx)
            src = x.meta["val"].dtype.name
            if src in ("float16", "bfloat16") and not isinstance(e, ir.Load):
                # the source is a half tensor: its computed-in-float32 value rounds first
                e = ir.Cast(e, "float32", src)
            rt = m.dtype.name if m.dtype.name in ("float16", "bfloat16") else None
            if rt is None and e.dtype == out_dt:
                return e
            return ir.Cast(e, out_dt, rt)
        if name == "full":
            return self.scalar(node.kwargs["fill_value"], out_dt)
        if name == "arange":
            kw = node.kwargs
            return ir.Iota(idx[0], float(kw["start"]), float(kw["step"]), out_dt)
        if name == "_stop_gradient":
            return self.expr(x, idx)
        if name == "expand":
            return self.expr(x, self.broadcast_idx(_shape(x), out_shape, idx))
        if name == "permute":
            dims = [d % len(idx) for d in node.kwargs["dims"]]
            src = [None] * len(dims)
            for k, d in enumerate(dims):
                src[d] = idx[k]
            return self.expr(x, tuple(src))
        if name == "flip":
            in_shape = _shape(x)
            dims = {d % len(in_shape) for d in node.kwargs["dims"]}
            src = tuple(self._const_idx(_sizes.add(in_shape[d], -1)) + i.scale(-1)
                        if d in dims else i for d, i in enumerate(idx))
            return self.expr(x, src)
        if name in ("slice", "select", "_index_view"):
            return self.expr(x, self._index_view(_shape(x), node.kwargs["key"], idx))
        if name in ("view", "_reshape_copy"):
            return self._view(x, out_shape, idx)
        raise Unsupported(f"no loop lowering for {name}")

    def _index_view(self, in_shape, key, idx):
        src, k = [], 0
        for d, entry in enumerate(key):
            if isinstance(entry, tuple):
                size = in_shape[d]
                if entry == (None, None, None):
                    src.append(idx[k])
                else:
                    start, _, step = slice(*entry).indices(size)
                    src.append(self._const_idx(start) + idx[k].scale(step))
                k += 1
            else:
                i = int(entry)
                src.append(self._const_idx(i % in_shape[d] if i < 0 else i))
        src.extend(idx[k:])
        return tuple(src)

    def _view(self, x, out_shape, idx):
        in_shape = _shape(x)
        a = [(d, s) for d, s in enumerate(in_shape) if s != 1]
        b = [(d, s) for d, s in enumerate(out_shape) if s != 1]
        if _keys([s for _, s in a]) == _keys([s for _, s in b]):  # only size-1 dims differ
            src = [self._const_idx()] * len(in_shape)
            for (da, _), (db, _) in zip(a, b):
                src[da] = idx[db]
            return self.expr(x, tuple(src))
        buf = self.buffer_of(x)
        if buf is None:
            raise Unsupported("view of a value that is not in a buffer")
        strides = _sizes.contiguous_strides(out_shape)
        a = self._const_idx()
        for i, s in zip(idx, strides):
            a = a + i.scale(s)
        m = x.meta["val"]
        return ir.Load(buf, a, m.dtype.name, compute_name(m.dtype))

    def _reduce(self, node, idx, out_dt):
        x = node.args[0]
        in_shape = _shape(x)
        dims = reduction_dims(node)
        red = tuple(d in dims for d in range(len(in_shape)))
        if _keys(in_shape) != _keys(self.space) or red != self.reduced:
            raise Unsupported("reduction over another space than its kernel's")
        keep = node.kwargs.get("keepdim", node.args[2] if len(node.args) > 2 else False)
        src, k = [], 0
        inner = {d for d in range(self.nd) if self.reduced[d]}
        for d in range(len(in_shape)):
            if red[d]:
                src.append(ir.Affine.var(d, self.nd))
                if keep:
                    k += 1
            else:
                if idx[k].uses() & inner:
                    raise Unsupported("a reduction read along its own reduced dims")
                src.append(idx[k])
                k += 1
        kind = node.target.name
        e = self.expr(x, tuple(src))
        acc_dt = "bool" if kind in ("any", "all") else out_dt
        return self.cast(ir.Reduce(kind, self.cast(e, acc_dt), acc_dt), out_dt)


def constant_array(node):
    """The value of a ``tensor`` creation node."""
    kw = node.kwargs
    dt = node.meta["val"].dtype
    return np.array(np.asarray(kw["data"]).astype(dt.np, copy=False), order="C")  # keeps 0-d

