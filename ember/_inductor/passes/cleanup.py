"""Pass 2, cleanup: no-op views and casts, constant folding, common subexpressions, dead
code.  Graphs are functional (no in-place ops), so a node with no users can go, and two
nodes with the same op and operands compute the same value -- except random ops, which
draw anew each call and are never merged, folded or dropped."""
import numpy as np

from ..._core.op import REGISTRY, Op
from ..._core.meta import TensorMeta, meta_of
from ..._core.tensor import Tensor, wrap
from .. import sizes as _sizes
from .classify import is_node

__all__ = ["cleanup"]


def _random(n):
    return isinstance(n.target, Op) and (n.target.category in ("random", "distributions")
                                         or n.target.name == "_rng_uniform")


def _same_meta(a, b):
    ma, mb = a.meta.get("val"), b.meta.get("val")
    return isinstance(ma, TensorMeta) and isinstance(mb, TensorMeta) and ma.dtype == mb.dtype \
        and tuple(_sizes.key(_sizes.size(d)) for d in ma.shape) == \
        tuple(_sizes.key(_sizes.size(d)) for d in mb.shape)


def _noop_input(n):
    """The input ``n`` merely passes on, or None."""
    if n.op != "call_function" or not isinstance(n.target, Op) or not n.args:
        return None
    x = n.args[0]
    if not is_node(x) or not _same_meta(n, x):
        return None
    name = n.target.name
    if name in ("view", "_reshape_copy", "expand", "_to_copy", "_stop_gradient"):
        return x
    if name == "permute" and list(n.kwargs.get("dims", ())) == list(range(len(n.kwargs["dims"]))):
        return x
    if name == "mul" and len(n.args) == 2 and not is_node(n.args[1]) and n.args[1] == 1 \
            and type(n.args[1]) is not bool:
        return x
    return None


def _noop_mul_left(n):
    # mul(1, x): decompositions write scale * x with scale 1
    if n.op == "call_function" and getattr(n.target, "name", None) == "mul" and \
            len(n.args) == 2 and not is_node(n.args[0]) and n.args[0] == 1 and \
            type(n.args[0]) is not bool and is_node(n.args[1]) and _same_meta(n, n.args[1]):
        return n.args[1]
    return None


def _hashable(v):
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__,) + tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    if is_node(v):
        return ("node", id(v))
    if isinstance(v, float) and v != v:
        return ("nan",)
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return (type(v).__name__, getattr(v, "expr", None), v)


def _fold(graph, n):
    """Replace a node whose inputs are all constants by a constant."""
    ins = [a for a in n.all_input_nodes]
    if not ins or _random(n) or not isinstance(n.target, Op) or n.target.n_out != 1:
        return False
    if not all(a.op == "call_function" and getattr(a.target, "name", None) == "tensor"
               for a in ins):
        return False
    m = n.meta.get("val")
    if not isinstance(m, TensorMeta) or not _sizes.is_static(m.shape):
        return False

    def conv(a):
        if is_node(a):
            return wrap(np.asarray(a.kwargs["data"]).astype(a.meta["val"].dtype.np))
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a)
        return a
    try:
        with np.errstate(all="ignore"):
            out = n.target(*conv(n.args), **conv(n.kwargs))
    except Exception:  # noqa: BLE001 - leave it to run at call time
        return False
    if not isinstance(out, Tensor):
        return False
    with graph.inserting_before(n):
        c = graph.call_function(REGISTRY["tensor"], (), {"data": np.array(out._data, copy=True),
                                                        "dtype": out.dtype.np})
    c.meta["val"] = meta_of(out)
    n.replace_all_uses_with(c)
    graph.erase_node(n)
    return True


def cleanup(gm):
    graph = gm.graph
    seen = {}
    for n in list(graph.nodes):
        if n.op != "call_function":
            continue
        x = _noop_input(n) or _noop_mul_left(n)
        # a graph output stays a distinct value (clone() must not return its input)
        if x is not None and not any(u.op == "output" for u in n.users):
            n.replace_all_uses_with(x)
            graph.erase_node(n)
            continue
        if _fold(graph, n):
            continue
        if _random(n):
            continue
        key = (id(n.target), _hashable(n.args), _hashable(n.kwargs))
        prior = seen.get(key)
        # two outputs stay two tensors (x.clone(), x.clone() may be written separately)
        if prior is not None and not (any(u.op == "output" for u in n.users) and
                                      any(u.op == "output" for u in prior.users)):
            n.replace_all_uses_with(prior)
            graph.erase_node(n)
        else:
            seen[key] = n
    graph.eliminate_dead_code(lambda n: n.op in ("placeholder", "output") or _random(n))
    return gm
