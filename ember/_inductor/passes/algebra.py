"""Pass 2b, algebra: rewrites that let fused loops do less work, value-preserving.

``exp(A - log(sum(exp(A))))`` (softmax written as the exp of log_softmax, as its
decomposition does) becomes ``exp(A) / sum(exp(A))``, the eager kernel's formula: the loop
nest then reuses the ``exp(A)`` its sum computed instead of taking a second exp of every
element.  exp(A) never exceeds the sum, so no overflow is introduced."""
from ..._core.op import REGISTRY, Op
from .cleanup import _random

__all__ = ["algebra"]


def _is(n, name):
    return getattr(n, "op", None) == "call_function" and isinstance(n.target, Op) and \
        n.target.name == name


def algebra(gm):
    graph = gm.graph
    for n in list(graph.nodes):
        if not _is(n, "exp") or not _is(n.args[0], "sub"):
            continue
        a, log_s = n.args[0].args
        if not _is(log_s, "log") or not _is(log_s.args[0], "sum"):
            continue
        s = log_s.args[0]
        e = s.args[0]
        if not _is(e, "exp") or e.args[0] is not a or not s.kwargs.get("keepdim", False):
            continue
        if n.meta["val"].dtype != e.meta["val"].dtype or s.kwargs.get("dtype") is not None:
            continue
        with graph.inserting_before(n):
            d = graph.call_function(REGISTRY["div"], (e, s))
        d.meta["val"] = n.meta["val"]
        n.replace_all_uses_with(d)
        graph.erase_node(n)
    graph.eliminate_dead_code(lambda n: n.op in ("placeholder", "output") or _random(n))
    return gm
