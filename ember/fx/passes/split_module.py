"""`split_module`: partition a GraphModule's nodes with a callback and return a
GraphModule that calls one generated submodule (``submod_<p>``) per partition."""
import operator

from ...nn import Module
from ..graph import Graph
from ..graph_module import GraphModule
from ..node import map_arg

__all__ = ["split_module", "Partition"]


class Partition:
    def __init__(self, name):
        self.name = name
        self.submod_name = f"submod_{name}"
        self.node_names = []
        self.nodes = []
        self.inputs = {}      # original node -> None (ordered)
        self.outputs = {}
        self.dependencies = {}
        self.dependents = {}

    def __repr__(self):
        return (f"name: {self.name},\n nodes: {self.node_names},\n inputs: {list(self.inputs)},"
                f"\n outputs: {list(self.outputs)},\n partitions depended on: "
                f"{list(self.dependencies)},\n partition dependents: {list(self.dependents)}")


def split_module(m, root_m, split_callback, qualname_map=None, keep_original_order=False):
    """Split ``m`` (a GraphModule) into submodules by ``split_callback(node) -> key``.

    ``root_m`` supplies the attributes the submodules reference; ``qualname_map``
    (filled in if given) maps new qualified names to the original ones."""
    partitions = {}
    owner = {}
    for node in m.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op == "get_attr":
            continue  # copied into every partition that reads it
        key = str(split_callback(node))
        p = partitions.get(key)
        if p is None:
            p = partitions[key] = Partition(key)
        p.node_names.append(node.name)
        p.nodes.append(node)
        owner[node] = p

    def record(user_p, value):
        def dep(n):
            src = owner.get(n)
            if src is user_p:
                return
            if n.op == "get_attr":
                return
            user_p.inputs.setdefault(n, None)
            if src is not None:
                src.outputs.setdefault(n, None)
                user_p.dependencies.setdefault(src.name, None)
                src.dependents.setdefault(user_p.name, None)
        map_arg(value, dep)

    for p in partitions.values():
        for node in p.nodes:
            record(p, (node.args, node.kwargs))
    out_node = next(n for n in m.graph.nodes if n.op == "output")
    map_arg(out_node.args, lambda n: owner[n].outputs.setdefault(n, None) if n in owner else None)

    # partitions run in dependency order (ties: first appearance in the original graph)
    order = _topo_order(partitions)
    submods = {}
    for p in order:
        g = Graph()
        env = {}
        for inp in p.inputs:
            env[inp] = g.placeholder(inp.name)

        def load(n, env=env, g=g):
            if n not in env:
                if n.op != "get_attr":
                    raise RuntimeError(f"split_module: {n} is used before it is defined")
                env[n] = g.get_attr(n.target)
            return env[n]
        for node in p.nodes:
            env[node] = g.node_copy(node, load)
        outs = [env[o] for o in p.outputs]
        g.output(outs[0] if len(outs) == 1 else tuple(outs))
        submods[p.submod_name] = GraphModule(root_m, g, p.submod_name)
        if qualname_map is not None:
            for node in g.nodes:
                if node.op in ("call_module", "get_attr"):
                    qualname_map[f"{p.submod_name}.{node.target}"] = node.target

    base = Graph()
    env = {}
    for node in m.graph.nodes:
        if node.op == "placeholder":
            env[node] = base.node_copy(node)
    for p in order:
        call = base.call_module(p.submod_name, tuple(env[i] for i in p.inputs))
        outs = list(p.outputs)
        if len(outs) == 1:
            env[outs[0]] = call
        else:
            for i, o in enumerate(outs):
                env[o] = base.call_function(operator.getitem, (call, i))
    base.output(map_arg(out_node.args[0], lambda n: env[n]))
    holder = Module()
    for name, sm in submods.items():
        holder.add_module(name, sm)
    return GraphModule(holder, base, "GraphModule")


def _topo_order(partitions):
    first = {k: i for i, k in enumerate(partitions)}
    pending = {k: set(p.dependencies) for k, p in partitions.items()}
    order = []
    while pending:
        ready = sorted((k for k, d in pending.items() if not d), key=first.get)
        if not ready:
            raise RuntimeError(f"split_module: the partitions {sorted(pending)} depend on each "
                               f"other cyclically")
        k = ready[0]
        order.append(partitions[k])
        del pending[k]
        for d in pending.values():
            d.discard(k)
    return order
