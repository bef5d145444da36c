"""`FxGraphDrawer`: a GraphModule as Graphviz dot source (no pydot needed: render the
text with ``dot -Tsvg``)."""
from ..graph_module import GraphModule
from ..node import _qualified_name

__all__ = ["FxGraphDrawer"]

_COLORS = {"placeholder": "AliceBlue", "get_attr": "Gainsboro", "call_module": "LemonChiffon1",
           "call_function": "LightSkyBlue", "call_method": "PaleGreen",
           "output": "PowderBlue"}


def _esc(s):
    for c in "\\{}|<>\"":
        s = s.replace(c, "\\" + c)
    return s.replace("\n", "\\n")


class FxGraphDrawer:
    """Draw ``graph_module`` (and its GraphModule submodules) as dot graphs named ``name``."""

    def __init__(self, graph_module, name, ignore_getattr=False,
                 ignore_parameters_and_buffers=False, skip_node_names_in_args=True,
                 parse_stack_trace=False, dot_graph_shape=None):
        self._name = name
        self._ignore_getattr = ignore_getattr
        self._skip_names = skip_node_names_in_args
        self._shape = dot_graph_shape or "record"
        self._dots = {name: self._to_dot(graph_module, name)}
        for node in graph_module.graph.nodes:
            if node.op == "call_module":
                sub = graph_module.get_submodule(node.target)
                if isinstance(sub, GraphModule):
                    key = f"{name}_{node.target}"
                    self._dots[key] = self._to_dot(sub, key)

    def get_dot_graph(self, submod_name=None):
        """The dot source of the main graph, or of submodule ``submod_name``."""
        if submod_name is None:
            return self.get_main_dot_graph()
        return self.get_submod_dot_graph(submod_name)

    def get_main_dot_graph(self):
        return self._dots[self._name]

    def get_submod_dot_graph(self, submod_name):
        return self._dots[f"{self._name}_{submod_name}"]

    def get_all_dot_graphs(self):
        return dict(self._dots)

    def _label(self, gm, node):
        target = node.target if isinstance(node.target, str) else _qualified_name(node.target)
        if node.op == "call_module":
            target = f"{target} ({type(gm.get_submodule(node.target)).__name__})"
        rows = [f"name=%{node.name}", f"op_code={node.op}", f"target={target}"]
        if node.args:
            rows.append(f"args={self._fmt(node.args)}")
        if node.kwargs:
            rows.append(f"kwargs={self._fmt(node.kwargs)}")
        tm = node.meta.get("tensor_meta")
        if tm is not None and hasattr(tm, "shape"):
            rows.append(f"shape={list(tm.shape)}")
            rows.append(f"dtype={tm.dtype}")
        return "{" + "|".join(_esc(r) for r in rows) + "}"

    def _fmt(self, a):
        s = repr(a)
        return s if len(s) < 120 else s[:117] + "..."

    def _to_dot(self, gm, name):
        lines = [f'digraph "{name}" {{', "  rankdir=TB;"]
        shown = set()
        for node in gm.graph.nodes:
            if self._ignore_getattr and node.op == "get_attr":
                continue
            shown.add(node)
            lines.append(f'  "{node.name}" [label="{self._label(gm, node)}", shape={self._shape}, '
                         f'style=filled, fillcolor="{_COLORS.get(node.op, "white")}"];')
        for node in gm.graph.nodes:
            if node not in shown:
                continue
            for user in node.users:
                if user in shown:
                    lines.append(f'  "{node.name}" -> "{user.name}";')
        lines.append("}")
        return "\n".join(lines) + "\n"
