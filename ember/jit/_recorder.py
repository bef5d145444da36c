"""The tracing recorder behind ``jit.trace``: run eagerly, record every op, as TorchScript's
tracer does.

`Recorder` is a dispatch mode: each operator call runs for real (below the recorder) and
is appended to a list, its tensor inputs resolved to what produced them -- a user input, a
parameter or buffer of the traced module, an earlier op's output, or else a constant
tensor, lifted into the program with its value at trace time (torch bakes such tensors in
too).  Python values read from tensors (``bool``, ``item``) are whatever they were for the
example: the branch taken is baked in, exactly as in torch.  In-place ops are recorded
functionally: the written tensor is bound to the new value, and a write into a buffer
becomes a buffer mutation of the program.  A write into a view (``z[0] = v``,
``z.view(-1).mul_(2)``) also rebinds the view's root, as ``index_put`` of the new values
at the view's positions in the root (known at trace time: sizes are static), and the
root's other views are read again from it (``take``) when next used.  `build` turns the
records into a `Program`.
"""
import operator

import numpy as np

from .._core.dispatch import DispatchMode
from .._core.meta import TensorMeta
from .._core.op import REGISTRY, InplaceOp
from .._core.tensor import Tensor, wrap
from ..fx import Graph, GraphModule
from ..nn.modules.module import Module
from ._program import Program

__all__ = ["Recorder"]


class Recorder(DispatchMode):
    """Records the ops run while active; see the module docstring."""

    def __init__(self, inputs, params, buffers):
        # id(tensor) -> ("input", i) | ("parameter", n) | ("buffer", n) | ("op", k, j)
        self.sources = {}
        self.by_data = {}  # id(array) -> ref: detach() and .data give new tensors on one array
        self.keep = []  # the tensors behind the ids, kept alive so ids stay unique
        self.records = []  # (op, args as refs, params, n_out, metas)
        self.constants = {}  # name -> tensor
        self.mutated_buffers = {}  # buffer name -> ref of its new value
        self.version = {}  # id(root tensor) -> how many times it was written in place
        self.view_version = {}  # id(view) -> its root's version when the view was bound
        self.sub = None  # a SubRecorder taking the ops while a branch is recorded
        self.input_metas = [TensorMeta(tuple(t.shape), t.dtype) for t in inputs]
        for i, t in enumerate(inputs):
            self._bind(t, ("input", i))
        for name, t in params:
            self._bind(t, ("parameter", name))
        for name, t in buffers:
            self._bind(t, ("buffer", name))
        self.buffer_of = {id(t): name for name, t in buffers}

    def _bind(self, t, ref):
        if id(t) not in self.sources:
            self.keep.append(t)
        self.sources[id(t)] = ref
        self.by_data[id(t._data)] = ref
        root = t._base
        if root is not None:  # a view: its binding holds until its root is written
            self.view_version[id(t)] = self.version.get(id(root), 0)

    def _add(self, op, refs, params, meta):
        """Append a one-output record; its ref."""
        self.records.append((op, tuple(refs), params, None, (meta,)))
        return ("op", len(self.records) - 1, 0)

    def _const(self, array):
        name = f"c_lifted_tensor_{len(self.constants)}"
        self.constants[name] = wrap(array)
        return ("constant", name)

    def ref(self, x):
        """The graph reference for op argument ``x``."""
        if not isinstance(x, Tensor):
            return ("value", x)
        root = x._base
        if root is not None and (id(root) in self.sources or id(root) in self.version):
            r = self.sources.get(id(x))
            if r is None or self.view_version.get(id(x), 0) != self.version.get(id(root), 0):
                # a view of a root written since (or never seen): read it from the root
                idx = _flat_index(x, root)
                r = self._add(_op("take"), (self.ref(root), self._const(idx)), {},
                              _meta(x))
                self._bind(x, r)
            return r
        r = self.sources.get(id(x)) or self.by_data.get(id(x._data))
        if r is None:
            name = f"c_lifted_tensor_{len(self.constants)}"
            self.constants[name] = x.detach()
            r = ("constant", name)
            self._bind(x, r)
        return r

    def __ember_dispatch__(self, op, args, kwargs):
        if self.sub is not None:  # a branch of a scripted if is being recorded on its own
            return self.sub.__ember_dispatch__(op, args, kwargs)
        inplace = isinstance(op, InplaceOp)
        refs = tuple(self.ref(a) for a in args)
        out = op(*args, **kwargs)
        base = op.base if inplace else op
        k = len(self.records)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if inplace:
            outs = (args[0],)
        metas = tuple(_meta(o) for o in outs)
        self.records.append((base, refs, dict(kwargs), len(outs) if (
            not inplace and isinstance(out, (tuple, list))) else None, metas))
        if inplace:
            self._written(args[0], ("op", k, 0))
        else:
            for j, o in enumerate(outs):
                self._bind(o, ("op", k, j))
        return out

    def _written(self, t, new):
        """``t`` now holds the value of record ``new`` (an in-place op wrote it): rebind it,
        and when it is a view, its root too (the root's other views are read again from the
        root when next used)."""
        root = t._base
        if root is None:
            self.version[id(t)] = self.version.get(id(t), 0) + 1
            self._bind(t, new)
        else:
            n = 1
            for s in root.shape:
                n *= int(s)
            flat = self._add(_op("view"), (self.ref(root),), {"shape": (n,)},
                             TensorMeta((n,), root.dtype))
            put = self._add(_op("index_put"), (flat, new, self._const(_flat_index(t, root))),
                            {"accumulate": False}, TensorMeta((n,), root.dtype))
            back = self._add(_op("view"), (put,), {"shape": tuple(int(s) for s in root.shape)},
                             _meta(root))
            self.version[id(root)] = self.version.get(id(root), 0) + 1
            self._bind(root, back)
            self._bind(t, new)
            t = root
        if id(t) in self.buffer_of:
            self.mutated_buffers[self.buffer_of[id(t)]] = self.sources[id(t)]

    def emit(self, g, env):
        """Append the recorded ops to graph ``g``; ``env`` maps refs to nodes (in and out)."""
        for k, (op, refs, kw, n_out, metas) in enumerate(self.records):
            args = tuple(env[r] if r[0] != "value" else r[1] for r in refs)
            node = g.create_node("call_function", op, args, kw, name=op.name)
            if n_out is None:
                node.meta["val"] = metas[0]
                env[("op", k, 0)] = node
            else:
                node.meta["val"] = metas
                for j in range(n_out):
                    item = g.call_function(operator.getitem, (node, j))
                    item.meta["val"] = metas[j]
                    env[("op", k, j)] = item

    def build(self, n_inputs, input_names, params, buffers, flat_outputs, in_spec, out_spec):
        """The `Program` of what was recorded, returning ``flat_outputs``."""
        out_refs = [self.ref(t) for t in flat_outputs]  # may lift constants: before placeholders
        g = Graph()
        env = {}
        specs = []
        for name, _ in params:
            env[("parameter", name)] = g.placeholder("p_" + name.replace(".", "_"))
            specs.append(("parameter", name))
        for name, _ in buffers:
            env[("buffer", name)] = g.placeholder("b_" + name.replace(".", "_"))
            specs.append(("buffer", name))
        for name in self.constants:
            env[("constant", name)] = g.placeholder(name)
            specs.append(("constant", name))
        for i in range(n_inputs):
            env[("input", i)] = g.placeholder(input_names[i])
            env[("input", i)].meta["val"] = self.input_metas[i]
            specs.append(("input", i))
        _set_metas(env, params, buffers, self.constants)
        self.emit(g, env)
        mutations = list(self.mutated_buffers)
        outs = [env[self.mutated_buffers[n]] for n in mutations]
        outs += [env[r] for r in out_refs]
        g.output(tuple(outs))
        g.eliminate_dead_code()
        gm = GraphModule(Module(), g)
        return Program(gm, specs, self.constants, in_spec, out_spec, mutations)


def _op(name):
    return REGISTRY[name]


def _meta(t):
    return TensorMeta(tuple(int(s) for s in t.shape), t.dtype)


def _flat_index(view, root):
    """The flat positions in ``root`` (C-contiguous) of each element of ``view``, which shares
    its memory: an int64 array of the view's shape, from the two arrays' addresses and
    strides."""
    v, r = view._data, root._data
    if type(v) is not np.ndarray or type(r) is not np.ndarray or \
            not r.flags.c_contiguous or v.itemsize != r.itemsize:
        raise RuntimeError("jit.trace: an in-place write into a view can be recorded only for "
                           "views of contiguous CPU tensors of the same dtype; write into a "
                           "copy (out-of-place ops) instead")
    size = r.itemsize
    offset = (v.__array_interface__["data"][0] - r.__array_interface__["data"][0]) // size
    idx = np.full(v.shape, offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(v.shape, v.strides)):
        shape = [1] * v.ndim
        shape[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * (st // size)).reshape(shape)
    return idx


def _set_metas(env, params, buffers, constants):
    for kind, items in (("parameter", params), ("buffer", buffers),
                        ("constant", list(constants.items()))):
        for name, t in items:
            env[(kind, name)].meta["val"] = TensorMeta(tuple(t.shape), t.dtype)

