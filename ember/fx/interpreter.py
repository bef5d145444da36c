"""`Interpreter` runs a GraphModule node by node (override its per-op methods to
observe or change execution); `Transformer` re-records the run into a new
GraphModule, so overriding a method rewrites the graph."""
import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_arg
from .proxy import Proxy
from .tracer import Tracer

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Execute ``module.graph`` one node at a time.

    Each node is run by `run_node`, which dispatches to `placeholder`, `get_attr`,
    `call_function`, `call_method`, `call_module` or `output`; values no later node
    reads are dropped as soon as possible (``garbage_collect_values``)."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            seen = set()
            self.user_to_last_uses = {}
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on ``args`` and return its output."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and hasattr(e, "add_note"):
                    e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        """Run with the inputs in a list that is cleared (so the caller drops its references)."""
        it = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(it)
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Run one node: fetch its argument values and call the method named by its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per op ----------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               f"was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---- helpers -----------------------------------------------------------------------
    def fetch_attr(self, target):
        """The attribute at qualified name ``target`` of the module."""
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        """The concrete values of ``n``'s args and kwargs."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(x):
            if x not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {x}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[x]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph, root):
        super().__init__(autowrap_modules=())
        self.graph = graph
        self.root = root
        from .tracer import _collect_tensor_attrs
        self.tensor_attrs = _collect_tensor_attrs(root)

    def is_leaf_module(self, m, qualname):
        return True


class Transformer(Interpreter):
    """An Interpreter whose run records a new graph: override `call_function` etc. to
    return different values (Proxies) and `transform` returns the rewritten GraphModule."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        if default is inspect.Signature.empty:
            node = self.new_graph.placeholder(target)
        else:
            node = self.new_graph.placeholder(target, default_value=default)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self):
        """Run the transformation and return the new GraphModule."""
        result = self.run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(self.tracer.create_arg(result))
        return GraphModule(self.module, self.new_graph)
