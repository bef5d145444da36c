"""Graph rewrites before lowering that give ONNX its own operator for a chain of ember ops.

Convolution reaches an ember graph as im2col -> view -> matmul (with the weight viewed as
(groups, O/groups, C/groups * k)) -> ``_from_cbl``.  Lowered op by op that is a window copy,
a matmul and transposes; recognised whole it is one ONNX ``Conv``, which runtimes compute
far faster and without the column buffer.
"""
from .._core.meta import TensorMeta
from ._builder import Value
from ._registry import LOWERINGS

__all__ = ["fuse_convolutions", "conv"]


def conv(x, w, bias, *, stride, pad, dilation, groups):
    """The graph target of a fused convolution (lowered by `_lower_conv`; never run)."""
    raise RuntimeError("ember.onnx: a fused convolution node is only lowered, never run")


def _op_name(node):
    return getattr(node.target, "name", None) if node.op == "call_function" else None


def _only_user(node, user):
    return len(node.users) == 1 and user in node.users


def _prod(xs):
    r = 1
    for v in xs:
        r *= int(v)
    return r


def _match(node):
    """The (x, w, bias, params) of a convolution ending in ``_from_cbl`` node ``node``."""
    mm, bias = node.args[0], node.args[1]
    if not hasattr(mm, "op") or _op_name(mm) != "matmul" or not _only_user(mm, node):
        return None
    wv, cv = mm.args
    if not (hasattr(wv, "op") and hasattr(cv, "op")) or _op_name(wv) != "view" or \
            _op_name(cv) != "view" or not _only_user(cv, mm):
        return None
    cols = cv.args[0]
    if _op_name(cols) != "im2col" or not _only_user(cols, cv):
        return None
    x, w = cols.args[0], wv.args[0]
    xm, wm = x.meta.get("val"), w.meta.get("val")
    if not isinstance(xm, TensorMeta) or not isinstance(wm, TensorMeta):
        return None
    ks = tuple(cols.kwargs["ks"])
    n = len(ks)
    if len(wm.shape) != 2 + n or tuple(int(k) for k in wm.shape[2:]) != ks or \
            len(xm.shape) != 2 + n:
        return None
    try:
        C, O, Cg = int(xm.shape[1]), int(wm.shape[0]), int(wm.shape[1])
    except TypeError:
        return None
    if Cg == 0 or C % Cg:
        return None
    groups = C // Cg
    want = (O, Cg * _prod(ks)) if groups == 1 else (groups, O // groups, Cg * _prod(ks))
    if tuple(int(d) for d in wv.kwargs["shape"]) != want:
        return None
    params = {"stride": tuple(cols.kwargs["stride"]), "pad": tuple(cols.kwargs["pad"]),
              "dilation": tuple(cols.kwargs["dilation"]), "groups": groups}
    return x, w, bias, params, (cols, cv, mm)


def fuse_convolutions(graph):
    """Replace each im2col/matmul/_from_cbl convolution in ``graph`` by one `conv` node."""
    for node in list(graph.nodes):
        if _op_name(node) != "_from_cbl":
            continue
        m = _match(node)
        if m is None:
            continue
        x, w, bias, params, dead = m
        with graph.inserting_before(node):
            fused = graph.call_function(conv, (x, w, bias), params)
        fused.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(fused)
        graph.erase_node(node)
        for d in reversed(dead):
            if not d.users:
                graph.erase_node(d)
    # the weight's view may have no user left
    for node in list(graph.nodes):
        if _op_name(node) == "view" and not node.users:
            graph.erase_node(node)


def _lower_conv(b, ctx, x, w, bias, *, stride, pad, dilation, groups):
    dt = ctx.out.dtype
    pads = [int(p[0]) for p in pad] + [int(p[1]) for p in pad]
    inputs = [b.cast(x, dt), b.cast(w, dt)]
    if isinstance(bias, Value):
        inputs.append(b.cast(bias, dt))
    return b.op("Conv", inputs, group=int(groups), kernel_shape=[int(k) for k in w.shape[2:]],
                strides=list(stride), dilations=list(dilation), pads=pads)


LOWERINGS[conv] = _lower_conv
