"""Pass 1, decompose: replace every op that lowers by decomposition with the primitives of
its ``op.decomp``.

The decomposition is run on stand-in tensors (zeros of each input's shape and dtype) under
a `Recorder`, which writes the primitives it calls into the graph in place of the node.
Extern ops (matmul -> BLAS, sort, linalg, fft) and primitives stay.  A node keeps its op
(and later runs its eager kernel) when decomposing it could change its meaning or cannot
be done once for all calls: random ops (their decomposition would freeze one draw of the
generator into the graph) and inputs that are runtime Python scalars.  A node with symbolic
sizes is traced at two sizes and generalised (`decompose_symbolic`), or kept when the two
traces differ in a way no size explains."""
import operator

import numpy as np

from ... import autograd as _autograd
from ..._core.op import Op
from ..._core.meta import TensorMeta
from ..._core.tensor import Tensor, wrap
from .. import config
from .. import sizes as _sizes
from .decompose_symbolic import decompose_symbolic
from .record import Recorder

__all__ = ["decompose"]

_MAX_ROUNDS = 16  # decompositions call primitives only; this bounds a mistake


def _decomposable(node):
    op = node.target
    if node.op != "call_function" or not isinstance(op, Op) or op.decomp is None:
        return False
    if op.lowering is None or op.lowering.kind != "decomposition":
        return False
    if op.category in ("random", "distributions") and not config.decompose_random:
        return False
    if node.meta.get("no_decompose"):
        return False
    for a in _flat(node.args) + _flat(list(node.kwargs.values())):
        if hasattr(a, "op") and not isinstance(a.meta.get("val"), TensorMeta):
            return False  # a runtime Python scalar: the decomposition would bake it in
    return True


def _is_symbolic(node):
    metas = [a.meta["val"] for a in _flat(node.args) + _flat(list(node.kwargs.values()))
             if hasattr(a, "op")]
    out = node.meta.get("val")
    metas += [m for m in (out if isinstance(out, tuple) else (out,)) if isinstance(m, TensorMeta)]
    return not all(_sizes.is_static(m.shape) for m in metas) or \
        any(_has_symbolic(v) for v in node.kwargs.values())


def _flat(a):
    if isinstance(a, (list, tuple)):
        return [y for x in a for y in _flat(x)]
    return [a]


def _has_symbolic(v):
    return any(getattr(x, "expr", None) is not None for x in _flat(v))


def _standin(meta):
    return wrap(np.zeros(tuple(int(d) for d in meta.shape), dtype=meta.dtype.np))


def _decompose_one(graph, node):
    env = {}
    rec = Recorder(graph, env)

    def conv(a):
        if hasattr(a, "op"):
            t = _standin(a.meta["val"])
            rec.bind(t, a)
            return t
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a)
        return a
    args = conv(node.args)
    kwargs = {k: conv(v) for k, v in node.kwargs.items()}
    with graph.inserting_before(node), np.errstate(all="ignore"), _autograd.no_grad():
        with rec:
            out = node.target.decomp(*args, **kwargs)
        if isinstance(out, (tuple, list)):
            users = list(node.users)
            if not all(u.target is operator.getitem for u in users):
                raise NotImplementedError("multi-output node used other than by getitem")
            repl = {i: (rec.node_of(o) if isinstance(o, Tensor) else None)
                    for i, o in enumerate(out)}
            for u in users:
                r = repl.get(u.args[1])
                if r is None:
                    raise NotImplementedError("decomposition output is not a tensor")
                u.replace_all_uses_with(r)
                graph.erase_node(u)
        else:
            if not isinstance(out, Tensor):
                raise NotImplementedError("decomposition output is not a tensor")
            node.replace_all_uses_with(rec.node_of(out))
    graph.erase_node(node)


def decompose(gm):
    """Decompose in place, until only primitives (and the nodes kept, see the module
    docstring) remain; returns ``gm``."""
    graph = gm.graph
    for _ in range(_MAX_ROUNDS):
        todo = [n for n in graph.nodes if _decomposable(n)]
        if not todo:
            break
        done = 0
        for node in todo:
            try:
                if _is_symbolic(node):
                    decompose_symbolic(graph, node)
                else:
                    _decompose_one(graph, node)
                done += 1
            except Exception:  # noqa: BLE001 - the node stays and runs its eager kernel
                node.meta["no_decompose"] = True
        if not done:
            break
    return gm
