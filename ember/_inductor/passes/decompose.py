"""Pass 1, decompose: replace every op that lowers by decomposition with the primitives of
its ``op.decomp``.

Each decomposition is traced on stand-in tensors and generalised (`decompose_symbolic`:
two traces, at other values and, for symbolic sizes, other sizes, must agree up to sizes),
so the primitives written into the graph hold for every call.  Extern ops (matmul -> BLAS,
sort, linalg, fft) and primitives stay.  A node keeps its op (and later runs its eager
kernel) when decomposing it could change its meaning or cannot be done once for all calls:
random ops (their decomposition would freeze one draw of the generator into the graph),
inputs that are runtime Python scalars, programs that read the input values or depend on
sizes in a way no size explains."""
from ..._core.meta import TensorMeta
from ..._core.op import Op
from .. import config
from .decompose_symbolic import decompose_symbolic

__all__ = ["decompose"]

_MAX_ROUNDS = 16  # decompositions call primitives only; this bounds a mistake


def _flat(a):
    if isinstance(a, (list, tuple)):
        return [y for x in a for y in _flat(x)]
    return [a]


def _decomposable(node):
    op = node.target
    if node.op != "call_function" or not isinstance(op, Op) or op.decomp is None:
        return False
    if op.lowering is None or op.lowering.kind != "decomposition":
        return False
    if op.category in ("random", "distributions") and not config.decompose_random:
        return False
    if node.meta.get("no_decompose") or op.name in config.keep_whole:
        return False
    for a in _flat(node.args) + _flat(list(node.kwargs.values())):
        if hasattr(a, "op") and not isinstance(a.meta.get("val"), TensorMeta):
            return False  # a runtime Python scalar: the decomposition would bake it in
    return True


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
                decompose_symbolic(graph, node)
                done += 1
            except Exception:  # noqa: BLE001 - the node stays and runs its eager kernel
                node.meta["no_decompose"] = True
        if not done:
            break
    return gm
