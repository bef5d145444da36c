"""The tracing recorder behind ``jit.trace``: run eagerly, record every op, as TorchScript's
tracer does.

`Recorder` is a dispatch mode: each operator call runs for real (below the recorder) and
is appended to a list, its tensor inputs resolved to what produced them -- a user input, a
parameter or buffer of the traced module, an earlier op's output, or else a constant
tensor, lifted into the program with its value at trace time (torch bakes such tensors in
too).  Python values read from tensors (``bool``, ``item``) are whatever they were for the
example: the branch taken is baked in, exactly as in torch.  In-place ops are recorded
functionally: the written tensor is bound to the new value, and a write into a buffer
becomes a buffer mutation of the program.  `build` turns the records into a `Program`.
"""
import operator

from .._core.dispatch import DispatchMode
from .._core.meta import TensorMeta
from .._core.op import InplaceOp
from .._core.tensor import Tensor
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

    def ref(self, x):
        """The graph reference for op argument ``x``."""
        if not isinstance(x, Tensor):
            return ("value", x)
        r = self.sources.get(id(x)) or self.by_data.get(id(x._data))
        if r is None:
            name = f"c_lifted_tensor_{len(self.constants)}"
            self.constants[name] = x.detach()
            r = ("constant", name)
            self._bind(x, r)
        return r

    def __ember_dispatch__(self, op, args, kwargs):
        inplace = isinstance(op, InplaceOp)
        out = op(*args, **kwargs)
        base = op.base if inplace else op
        refs = tuple(self.ref(a) for a in args)
        k = len(self.records)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if inplace:
            outs = (args[0],)
        metas = tuple(TensorMeta(tuple(int(s) for s in o.shape), o.dtype) for o in outs)
        self.records.append((base, refs, dict(kwargs), len(outs) if (
            not inplace and isinstance(out, (tuple, list))) else None, metas))
        for j, o in enumerate(outs):
            self._bind(o, ("op", k, j))
        if inplace and id(args[0]) in self.buffer_of:
            self.mutated_buffers[self.buffer_of[id(args[0])]] = ("op", k, 0)
        return out

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
        for k, (op, refs, kw, n_out, metas) in enumerate(self.records):
            args = tuple(env[r] if r[0] != "value" else r[1] for r in refs)
            node = g.create_node("call_function", op, args, kw, name=op.name.strip("_") or "op")
            if n_out is None:
                node.meta["val"] = metas[0]
                env[("op", k, 0)] = node
            else:
                node.meta["val"] = metas
                for j in range(n_out):
                    item = g.call_function(operator.getitem, (node, j))
                    item.meta["val"] = metas[j]
                    env[("op", k, j)] = item
        mutations = list(self.mutated_buffers)
        outs = [env[self.mutated_buffers[n]] for n in mutations]
        outs += [env[r] for r in out_refs]
        g.output(tuple(outs))
        g.eliminate_dead_code()
        gm = GraphModule(Module(), g)
        return Program(gm, specs, self.constants, in_spec, out_spec, mutations)


def _set_metas(env, params, buffers, constants):
    for kind, items in (("parameter", params), ("buffer", buffers),
                        ("constant", list(constants.items()))):
        for name, t in items:
            env[(kind, name)].meta["val"] = TensorMeta(tuple(t.shape), t.dtype)

