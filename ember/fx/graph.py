"""`Graph`: the doubly-linked list of `Node`s that fx passes read and rewrite.

Node names are unique, deterministic and readable (``conv1``, ``add``, ``add_1``,
``layer1_0_conv1``); `python_code` turns a graph back into Python source
(see codegen.py).
"""
import builtins
import copy
import keyword
import re

from .node import Node, map_arg

__all__ = ["Graph", "PythonCode"]

_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | {"self", "ember", "operator", "inf",
                                                          "nan", "math", "device", "fx"}


def _snake_case(s):
    """CamelCase -> camel_case (``ReLU`` -> ``re_lu`` like torch's naming)."""
    chars = []
    prev_lower = False
    for c in s:
        if prev_lower and c.isupper():
            chars.append("_")
        chars.append(c.lower())
        prev_lower = c.islower()
    return "".join(chars)


class _Namespace:
    """Hands out unique Python identifiers derived from candidate names."""

    def __init__(self):
        self._used = set()
        self._base_count = {}
        self._obj_to_name = {}

    def create_name(self, candidate, obj=None):
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (m.group(1), int(m.group(2))) if m else (candidate, None)
        if num is None and candidate not in self._used and candidate not in _RESERVED:
            name = candidate
        else:
            if num is None:
                num = self._base_count.get(base, 0) + 1
            name = f"{base}_{num}"
            while name in self._used or name in _RESERVED:
                num += 1
                name = f"{base}_{num}"
            self._base_count[base] = max(self._base_count.get(base, 0), num)
        self._used.add(name)
        if obj is not None:
            self._obj_to_name[id(obj)] = name
        return name

    def associate_name_with_obj(self, name, obj):
        self._obj_to_name[id(obj)] = name

    def _rename_object(self, obj, name):
        self._obj_to_name[id(obj)] = name


class _NodeList:
    """Live view of a graph's nodes (skips nodes erased while iterating)."""

    def __init__(self, graph, reverse=False):
        self._graph = graph
        self._reverse = reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        attr = "_prev" if self._reverse else "_next"
        cur = getattr(root, attr)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, attr)

    def __reversed__(self):
        return _NodeList(self._graph, not self._reverse)

    def __repr__(self):
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph, new_insert):
        self.graph = graph
        self.orig, graph._insert = graph._insert, new_insert

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.graph._insert = self.orig


class CodeGen:
    """How a Graph's Python code begins and ends, and what its callers pass and receive:
    ``gen_fn_def`` writes the ``def`` line, ``generate_output`` the return statement,
    ``process_inputs``/``process_outputs`` convert the values the GraphModule's callers use
    to and from the graph's own (identity here; a subclass may flatten pytrees), and
    ``additional_globals`` lists (name, object) pairs the code needs.  Install one with
    ``Graph.set_codegen``."""

    def __init__(self):
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars, maybe_return_annotation, *, expanded_def=False):
        """The ``def`` line for parameters ``free_vars`` (``self`` added when missing)."""
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        if expanded_def:
            params = "".join(f"\n    {v}," for v in free_vars)
            return f"def {self._func_name}({params}\n){maybe_return_annotation}:"
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args, *, descs=None, repr_fn=None):
        """The return statement for the output node's argument ``output_args`` (written
        with ``repr_fn``, the code generator's value formatter, when given)."""
        return f"return {repr_fn(output_args) if repr_fn is not None else repr(output_args)}"

    def process_inputs(self, *args):
        return args

    def process_outputs(self, outputs):
        return outputs

    def additional_globals(self):
        return []


class PythonCode:
    """Generated source: ``src`` (the forward body), ``globals`` it needs, and an
    import block that rebuilds those globals in a fresh process."""

    def __init__(self, src, globals, _lineno_map, _prologue_start=0, imports=""):
        self.src = src
        self.globals = globals
        self._lineno_map = _lineno_map or {}
        self._prologue_start = _prologue_start
        self.imports = imports


def _target_to_str(target):
    """The node name a target suggests, as torch's: a function's own ``__name__`` (leading
    underscores kept: ``_f`` names its node ``_f``), a method's name without the dunder
    (``__add__`` -> ``add``)."""
    if isinstance(target, str):
        if target.startswith("*"):
            target = target.lstrip("*")
        if len(target) > 4 and target.startswith("__") and target.endswith("__"):
            target = target[2:-2]
        return _snake_case(target.replace(".", "_"))
    name = getattr(target, "__name__", None)
    if name is None:   # an ember Op is named by its operator name
        op_name = getattr(target, "name", None)
        name = op_name if isinstance(op_name, str) else type(target).__name__
    return _snake_case(name) or "fn"


class Graph:
    """The main data structure of fx: a list of Nodes with helpers to build and edit it."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        return _NodeList(self)

    # ---- node creation --------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Create a Node and insert it at the current insert point."""
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else dict(kwargs)
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    @staticmethod
    def _target_to_str(target):
        return _target_to_str(target)

    def placeholder(self, name, type_expr=None, default_value=_RESERVED):
        """An input of the graph (a forward argument), optionally with a default value."""
        args = () if default_value is _RESERVED else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        """Fetch ``qualified_name`` (a parameter, buffer or attribute) of the owning module."""
        mod = self.owning_module
        if mod is not None:
            import warnings
            try:
                _fetch_attr(mod, qualified_name)
            except AttributeError:
                warnings.warn(f"Attempted to insert a get_attr Node with no underlying reference "
                              f"in the owning GraphModule! Call GraphModule.add_submodule to add "
                              f"the necessary submodule, GraphModule.add_parameter to add the "
                              f"necessary Parameter, or nn.Module.register_buffer to add the "
                              f"necessary buffer", UserWarning, stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        """Call submodule ``module_name`` of the owning module."""
        mod = self.owning_module
        if mod is not None:
            try:
                mod.get_submodule(module_name)
            except AttributeError:
                import warnings
                warnings.warn("Attempted to insert a call_module Node with no underlying reference "
                              "in the owning GraphModule! Call GraphModule.add_submodule to add "
                              "the necessary submodule", UserWarning, stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        """Call method ``method_name`` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        """Call the free function ``the_function`` (the node named ``name`` if given, made
        unique)."""
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        """The value the graph returns."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    # ---- editing ---------------------------------------------------------------------
    def inserting_before(self, n=None):
        """Context manager: new nodes go before ``n`` (the start of the graph if None)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """Context manager: new nodes go after ``n`` (the end of the graph if None)."""
        if n is None:
            return self.inserting_before(self._root)
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase):
        """Remove a node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase.args, to_erase.kwargs = (), {}

    def node_copy(self, node, arg_transform=lambda x: x):
        """Copy ``node`` (from any graph) into this one, mapping its input Nodes with
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Append copies of ``g``'s nodes; ``val_map`` maps old nodes to new ones (filled in).
        Returns the copied output value (or the output node itself if asked)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        val_map = {}
        out = g.graph_copy(self, val_map, return_output_node=True)
        for old, new in val_map.items():
            new.meta = copy.deepcopy(old.meta, memo)
        if out is not None:
            rv, old_out = out
            o = g.output(rv, type_expr=old_out.type)
            o.meta = copy.deepcopy(old_out.meta, memo)
        g._codegen = copy.deepcopy(self._codegen, memo)
        return g

    def __reduce__(self):
        # a flat node list: pickling the linked list itself would recurse once per node
        rows = []
        for n in self.nodes:
            ref = lambda x: _Ref(x.name)  # noqa: E731
            rows.append((n.op, n.target, map_arg(n.args, ref), map_arg(n.kwargs, ref), n.name,
                         n.type, n.meta))
        return (_rebuild_graph, (rows, self._tracer_cls, self._codegen))

    def output_node(self):
        """The graph's output node (its last node)."""
        last = next(iter(reversed(self.nodes)))
        if last.op != "output":
            raise AssertionError(f"Expected output node, got op={last.op}")
        return last

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes of kind ``op`` (calling ``target`` if given), in graph order (ember scans
        the node list, so ``sort=False`` returns the same order)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def eliminate_dead_code(self, is_impure_node=None):
        """Remove nodes with no users that have no side effects; True if any were removed."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    # ---- checking and printing ---------------------------------------------------------
    def lint(self):
        """Check the graph is well formed: links, names, uses before defs, targets."""
        seen_names = set()
        seen = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node._next._prev is not node or node._prev._next is not node:
                raise RuntimeError(f"Node '{node}' has broken prev/next links")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            for arg in node._input_nodes:
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       f"has been defined! Please check that Nodes in the graph "
                                       f"are topologically ordered\n{self}")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{arg}' does not record user '{node}'")
            for user in node.users:
                if user._erased or user.graph is not self:
                    raise RuntimeError(f"Node '{node}' has a stale user '{user}'")
            seen.add(node)
            if node.op == "output" and node._next is not self._root:
                raise RuntimeError("output node is not the last node of the graph")
            mod = self.owning_module
            if mod is not None and node.op in ("get_attr", "call_module"):
                try:
                    obj = _fetch_attr(mod, node.target)
                except AttributeError:
                    raise RuntimeError(f"Node {node} target {node.target} references "
                                       f"nonexistent attribute of {type(mod).__name__}") from None
                from ..nn import Module
                if node.op == "call_module" and not isinstance(obj, Module):
                    raise RuntimeError(f"Node {node} target {node.target} {type(obj).__name__} "
                                       f"is not a Module")

    def __str__(self):
        placeholder_names = []
        ret = [None]
        lines = [n.format_node(placeholder_names, ret) for n in self.nodes]
        head = f"graph({', '.join(placeholder_names)}){ret[0] or ''}:"
        return "\n".join([head] + ["    " + s for s in lines if s])

    def print_tabular(self):
        """Print the nodes as a table (opcode, name, target, args, kwargs)."""
        print(self._tabular())

    def _tabular(self):
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            rows.append([n.op, n.name, str(n._pretty_target()), str(n.args), str(n.kwargs)])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        sep = ["-" * w for w in widths]
        out = [rows[0], sep] + rows[1:]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in out)

    # ---- code generation ------------------------------------------------------------
    def set_codegen(self, codegen):
        """Generate this graph's code with ``codegen`` (a `CodeGen`)."""
        self._codegen = codegen

    def process_inputs(self, *args):
        """The graph's inputs for caller-side ``args`` (see `CodeGen.process_inputs`)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        """The caller-side result for the graph's output ``out``."""
        return self._codegen.process_outputs(out)

    def on_generate_code(self, make_transformer):
        """Install ``make_transformer(previous)`` as the transformer of the generated body
        (a function from the list of body lines, each ending in a newline, to a new list);
        the returned context manager restores the previous transformer on exit."""
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)
        graph = self

        class _Restore:
            def __enter__(self):
                return None

            def __exit__(self, *exc):
                graph._codegen._body_transformer = previous
        return _Restore()

    def python_code(self, root_module="self", *, verbose=False, include_stride=False,
                    include_device=False, colored=False, expanded_def=False, record_func=False,
                    additional_meta=None):
        """Python source of a ``forward`` that runs this graph, with the globals it needs
        (the options: ``ember.fx.codegen.generate``)."""
        from .codegen import generate
        return generate(self, root_module, verbose=verbose, include_stride=include_stride,
                        include_device=include_device, colored=colored,
                        expanded_def=expanded_def, record_func=record_func,
                        additional_meta=additional_meta)


class _Ref:
    """A reference to a node by name inside a pickled Graph."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (_Ref, (self.name,))


def _rebuild_graph(rows, tracer_cls=None, codegen=None):
    g = Graph(tracer_cls=tracer_cls)
    if codegen is not None:
        g._codegen = codegen
    env = {}

    def deref(a):
        from .node import map_aggregate
        return map_aggregate(a, lambda x: env[x.name] if isinstance(x, _Ref) else x)
    for op, target, args, kwargs, name, type_expr, meta in rows:
        n = g.create_node(op, target, deref(args), deref(kwargs), name, type_expr)
        n.meta = meta
        env[name] = n
    return g


def _fetch_attr(mod, target):
    obj = mod
    for item in target.split("."):
        obj = getattr(obj, item)
    return obj
