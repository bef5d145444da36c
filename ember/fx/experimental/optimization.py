"""`fuse`: fold eval-mode BatchNorm into the preceding Conv/Linear (one op fewer, same
output), via symbolic tracing."""
import copy

from ...autograd.grad_mode import no_grad
from ...nn import (BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, Linear,
                   Parameter)
from ..graph_module import GraphModule
from ..tracer import symbolic_trace

__all__ = ["fuse", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "matches_module_pattern", "replace_node_module"]

_PATTERNS = [(Conv1d, BatchNorm1d), (Conv2d, BatchNorm2d), (Conv3d, BatchNorm3d),
             (Linear, BatchNorm1d)]


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """Conv weight and bias with an eval BatchNorm folded in, as Parameters."""
    from ...ops.creation import ones_like, zeros_like
    from ...ops.pointwise import rsqrt
    with no_grad():
        if conv_b is None:
            conv_b = zeros_like(bn_rm)
        if bn_w is None:
            bn_w = ones_like(bn_rm)
        if bn_b is None:
            bn_b = zeros_like(bn_rm)
        scale = bn_w * rsqrt(bn_rv + bn_eps)
        shape = [1] * conv_w.dim()
        shape[1 if transpose else 0] = -1
        w = (conv_w * scale.reshape(shape)).to(conv_w.dtype)
        b = ((conv_b - bn_rm) * scale + bn_b).to(conv_w.dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_w.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` computing ``bn(conv(x))`` of eval-mode modules."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` computing ``bn(linear(x))`` of eval-mode modules."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features")
    return fuse_conv_bn_eval(linear, bn)


def matches_module_pattern(pattern, node, modules):
    """Whether ``node`` calls a ``pattern[1]`` module on the output of a ``pattern[0]`` one."""
    if node.op != "call_module" or not node.args:
        return False
    prev = node.args[0]
    if not hasattr(prev, "op") or prev.op != "call_module":
        return False
    if prev.target not in modules or node.target not in modules:
        return False
    return type(modules[prev.target]) is pattern[0] and type(modules[node.target]) is pattern[1]


def replace_node_module(node, modules, new_module):
    """Install ``new_module`` at ``node.target`` (in ``modules`` and the owning module)."""
    *parent, name = node.target.rsplit(".", 1) if "." in node.target else ("", node.target)
    parent = parent[0] if parent else ""
    modules[node.target] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model, inplace=False, no_trace=False):
    """Fold every eval-mode BatchNorm that directly follows a Conv/Linear into it.

    Returns a GraphModule without the BatchNorm modules; ``model`` is copied first
    unless ``inplace``."""
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if (no_trace and isinstance(model, GraphModule)) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    graph = copy.deepcopy(fx_model.graph)
    for pattern in _PATTERNS:
        for node in list(graph.nodes):
            if not matches_module_pattern(pattern, node, modules):
                continue
            conv_node = node.args[0]
            if len(conv_node.users) > 1:
                continue  # the conv output is also read elsewhere: it must stay unfused
            conv, bn = modules[conv_node.target], modules[node.target]
            if not bn.track_running_stats or conv.training or bn.training:
                continue
            fused = fuse_linear_bn_eval(conv, bn) if pattern[0] is Linear else \
                fuse_conv_bn_eval(conv, bn)
            replace_node_module(conv_node, modules, fused)
            node.replace_all_uses_with(conv_node)
            graph.erase_node(node)
    return GraphModule(fx_model, graph, type(fx_model).__name__)


