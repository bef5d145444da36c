"""The debug check between passes (``config.verify_passes``): the graph is well formed (fx
lint) and every value carries its metadata, agreeing with its op's shape rule."""
from ..._core.meta import DataDependentShape, TensorMeta
from ..._core.op import Op
from .classify import is_node

__all__ = ["verify_graph"]


def _meta_arg(a):
    if is_node(a):
        return a.meta.get("val")
    if isinstance(a, (list, tuple)):
        return type(a)(_meta_arg(x) for x in a)
    return a


def verify_graph(gm, after):
    """Raise AssertionError naming pass ``after`` and the node when the graph is not
    sound."""
    try:
        gm.graph.lint()
    except RuntimeError as e:
        raise AssertionError(f"after pass {after!r}: {e}") from None
    for n in gm.graph.nodes:
        if n.op == "output":
            continue
        v = n.meta.get("val")
        if v is None:
            raise AssertionError(f"after pass {after!r}: node {n.name} has no meta['val']")
        if n.op != "call_function" or not isinstance(n.target, Op) or not isinstance(v, TensorMeta):
            continue
        if n.target.shape is None:
            continue
        try:
            rule = n.target.shape(*_meta_arg(n.args), **n.kwargs)
        except (DataDependentShape, Exception):  # noqa: BLE001 - a rule may not take metas
            continue
        shape, dtype = rule
        if tuple(int(d) for d in shape) != tuple(int(d) for d in v.shape) or dtype != v.dtype:
            raise AssertionError(f"after pass {after!r}: node {n.name} ({n.target}) has meta "
                                 f"{v}, its shape rule says ({tuple(shape)}, {dtype})")
