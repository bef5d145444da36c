"""`fuse`: fold eval-mode BatchNorm into the preceding Conv/Linear (one op fewer, same
output), via symbolic tracing."""
import copy

from ...nn import BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, Linear
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval
from ..graph_module import GraphModule
from ..tracer import symbolic_trace

__all__ = ["fuse", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "matches_module_pattern", "replace_node_module"]

_PATTERNS = [(Conv1d, BatchNorm1d), (Conv2d, BatchNorm2d), (Conv3d, BatchNorm3d),
             (Linear, BatchNorm1d)]


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


