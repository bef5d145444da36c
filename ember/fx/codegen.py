"""Python source for a Graph: one readable statement per node.

Operators print as operators (``add = x + y``, ``getitem = x[0]``), ember and
``ember.nn.functional`` functions by their public names (``ember.relu(x)``),
other functions as globals that the generated import block can rebuild in a
fresh process (so pickled GraphModules regenerate their code on load).
Values are released after their last use (``x = None``) as PyTorch does.
"""
import builtins
import math
import operator
import sys

from .._core.op import OPS, REGISTRY, Op
from ._namespace import ember_namespace
from .graph import PythonCode, _Namespace
from .node import Node

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
           operator.matmul: "@", operator.lshift: "<<", operator.rshift: ">>",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lt: "<",
           operator.le: "<=", operator.eq: "==", operator.ne: "!=", operator.gt: ">",
           operator.ge: ">=", operator.is_: "is", operator.is_not: "is not"}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~",
          operator.not_: "not "}


def _resolvable(obj):
    """(module, qualname) if ``obj`` can be imported back by name, else None."""
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    if not mod or not qual or "<" in qual:
        return None
    m = sys.modules.get(mod)
    cur = m
    for part in qual.split("."):
        cur = getattr(cur, part, None)
    return (mod, qual) if cur is obj else None


def _name_hint(obj):
    # torch names a global from its qualified name (`__main__.f` -> `__main___f`), so two
    # functions called f from different modules stay apart and the code says where each is from
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str):
        return "_const"
    mod = getattr(obj, "__module__", None)
    if not isinstance(mod, str) or mod == "builtins" or not name.isidentifier():
        return name
    return f"{mod}.{name}"


class _Globals:
    def __init__(self, node_names):
        self.ns = _Namespace()
        self.ns._used.update(node_names)
        self.globals = {}
        self.imports = {}
        self.sizes_bound = False   # symbolic sizes print as expressions (see generate)
        self._by_id = {}
        self._ops = None
        self.paint = lambda kind, text: text  # generate(colored=True) sets ANSI colouring

    def _module(self, name, module):
        self.globals[name] = module
        self.imports[name] = f"import {name}"
        return name

    def name_of(self, obj):
        """A Python expression naming ``obj`` in the generated code."""
        if id(obj) in self._by_id:
            return self._by_id[id(obj)]
        expr = self._public_name(obj)
        if expr is None:
            name = self.ns.create_name(_name_hint(obj))
            self.globals[name] = obj
            r = _resolvable(obj)
            self.imports[name] = f"from {r[0]} import {r[1]} as {name}" if r and "." not in r[1] \
                else None
            expr = name
        self._by_id[id(obj)] = expr
        return expr

    def _public_name(self, obj):
        if type(obj) is Op and REGISTRY.get(obj.name) is obj:
            if self._ops is None:
                self._ops = self.ns.create_name("ops")
                self.globals[self._ops] = OPS
                self.imports[self._ops] = f"from ember._core.op import OPS as {self._ops}"
            if obj.name.isidentifier():
                return f"{self._ops}.{obj.name}"
            return f"{self._ops}[{obj.name!r}]"   # a custom op: "namespace::name"
        ember = ember_namespace()
        short = getattr(obj, "__name__", None)
        if isinstance(short, str):
            if getattr(builtins, short, None) is obj:
                return short
            if getattr(operator, short, None) is obj:
                return f"{self._module('operator', operator)}.{short}"
            if getattr(math, short, None) is obj:
                return f"{self._module('math', math)}.{short}"
            if str(getattr(obj, "__module__", "")).startswith("ember"):
                from .node import _qualified_name
                if getattr(ember, short, None) is obj or \
                        getattr(ember.nn.functional, short, None) is obj:
                    self._module("ember", ember)
                    return _qualified_name(obj)
            if getattr(ember, short, None) is obj:
                return f"{self._module('ember', ember)}.{short}"
            if getattr(ember.nn, short, None) is obj:
                self._module("ember", ember)
                return f"ember.nn.{short}"
        return None

    def import_block(self):
        lines = []
        for name, line in self.imports.items():
            if line is None:
                lines.append(f"# '{name}' ({self.globals[name]!r}) cannot be imported by name")
            else:
                lines.append(line)
        return "\n".join(lines)


def _attr_path(root, target):
    expr = root
    for part in target.split("."):
        expr = f"{expr}.{part}" if part.isidentifier() else f'getattr({expr}, "{part}")'
    return expr


def _repr(a, g):
    if isinstance(a, Node):
        return a.name
    if type(a) is tuple or (isinstance(a, tuple) and not hasattr(a, "_fields")):
        inner = ", ".join(_repr(x, g) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, tuple):
        return f"{g.name_of(type(a))}({', '.join(_repr(x, g) for x in a)})"
    if isinstance(a, list):
        return "[" + ", ".join(_repr(x, g) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{_repr(k, g)}: {_repr(v, g)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_repr(a.start, g)}, {_repr(a.stop, g)}, {_repr(a.step, g)})"
    if a is Ellipsis:
        return "..."
    if isinstance(a, float):
        if math.isinf(a) or math.isnan(a):
            g.globals["inf"], g.globals["nan"] = math.inf, math.nan
            g.imports["inf"] = "from math import inf, nan"
            return g.paint("blue", ("-inf" if a < 0 else "inf") if math.isinf(a) else "nan")
        return g.paint("blue", repr(a))
    expr = getattr(a, "expr", None)
    if isinstance(a, int) and isinstance(expr, str) and g.sizes_bound:
        return expr if expr.isidentifier() else f"({expr})"   # a symbolic size
    if a is None or isinstance(a, (bool, int, str, complex, bytes)):
        return g.paint("blue", repr(int(a)) if isinstance(a, int) and type(a) not in (int, bool)
                       else repr(a))
    from .._core.device import device
    from .._core.dtype import dtype
    if isinstance(a, dtype):
        g._module("ember", sys.modules["ember"])
        return repr(a)
    if isinstance(a, device):
        g._module("ember", sys.modules["ember"])
        return f"ember.device({str(a)!r})"
    return g.name_of(a)


def _index(a, g):
    """Subscript text: ``x[0]``, ``x[:, 1:3]``, ``x[..., None]``."""
    def one(i):
        if isinstance(i, slice):
            parts = ["" if v is None else _repr(v, g) for v in (i.start, i.stop, i.step)]
            return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
        return _repr(i, g)
    if type(a) is tuple and a:
        return ", ".join(one(i) for i in a) + ("," if len(a) == 1 else "")
    return one(a)


def _call_args(args, kwargs, g):
    parts = [_repr(a, g) for a in args] + [f"{k} = {_repr(v, g)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _expr(node, root, g):
    op, t, args, kwargs = node.op, node.target, node.args, node.kwargs
    if op == "get_attr":
        return _attr_path(root, t)
    if op == "call_module":
        return f"{_attr_path(root, t)}({_call_args(args, kwargs, g)})"
    if op == "call_method":
        return f"{_repr(args[0], g)}.{t}({_call_args(args[1:], kwargs, g)})"
    if not kwargs:
        if t in _BINARY and len(args) == 2:
            return f"{_repr(args[0], g)} {_BINARY[t]} {_repr(args[1], g)}"
        if t in _UNARY and len(args) == 1:
            return f"{_UNARY[t]}{_repr(args[0], g)}"
        if t is operator.getitem and len(args) == 2:
            return f"{_repr(args[0], g)}[{_index(args[1], g)}]"
        if t is builtins.getattr and len(args) == 2 and isinstance(args[1], str) and \
                args[1].isidentifier():
            return f"{_repr(args[0], g)}.{args[1]}"
    return f"{g.name_of(t)}({_call_args(args, kwargs, g)})"


def _symbolic_sizes_used(nodes):
    def has(a):
        if isinstance(a, (tuple, list)):
            return any(has(x) for x in a)
        if isinstance(a, dict):
            return any(has(x) for x in a.values())
        if isinstance(a, slice):
            return has((a.start, a.stop, a.step))
        return isinstance(a, int) and isinstance(getattr(a, "expr", None), str)
    return any(n.op not in ("placeholder", "output") and (has(n.args) or has(n.kwargs))
               for n in nodes)


def _size_bindings(nodes):
    """``s0 = x.shape[0]`` for each size symbol an input's shape binds (metadata
    ``val``), so that symbolic sizes in arguments print as expressions over them and the
    code runs at every size (torch's graphs read ``x.size(0)`` for this)."""
    bound, lines = set(), []
    for n in nodes:
        if n.op != "placeholder":
            continue
        val = n.meta.get("val")
        expr = getattr(val, "expr", None)
        if isinstance(val, int) and isinstance(expr, str) and expr.isidentifier():
            if expr not in bound and expr != n.name:
                lines.append(f"{expr} = {n.name}")
            bound.add(expr)
            continue
        for d, size in enumerate(getattr(val, "shape", ()) or ()):
            expr = getattr(size, "expr", None)
            if isinstance(size, int) and isinstance(expr, str) and expr.isidentifier() and \
                    expr not in bound:
                bound.add(expr)
                lines.append(f"{expr} = {n.name}.shape[{d}]")
    return lines


_COLORS = {"red": "\033[31m", "blue": "\033[34m", "dim": "\033[2m",
           "dim_blue": "\033[2m\033[34m", "dim_green": "\033[2m\033[32m"}


def _painter(colored):
    if not colored:
        return lambda kind, text: text
    return lambda kind, text: f"{_COLORS[kind]}{text}\033[0m" if text else text


def _shape_text(shape):
    return f"[{', '.join(str(x) for x in shape)}]"


def _annotation(node, paint, include_stride, include_device):
    """torch's verbose annotation of a node's value: ``: "f32[2, 3]"`` (with strides and the
    device on request) from ``meta['val']`` (a Tensor) or ``meta['tensor_meta']``."""
    from .._core.tensor import Tensor
    meta = node.meta
    val = meta.get("val", meta.get("tensor_meta", meta.get("example_value")))
    if isinstance(val, Tensor):
        stride = _shape_text(val.stride()) if include_stride else ""
        device = str(val.device) if include_device else ""
        return (f': "{paint("red", val.dtype.abbr)}{paint("blue", _shape_text(val.shape))}'
                f'{paint("dim_blue", stride)}{paint("dim_green", device)}"')
    if hasattr(val, "dtype") and hasattr(val, "shape") and hasattr(val.dtype, "abbr"):
        return f': "{val.dtype.abbr}{_shape_text(val.shape)}"'
    return ""


def _stack_summary(node, additional_meta):
    """The comment torch's verbose code puts above each run of nodes from one source line."""
    extra = ""
    if additional_meta:
        parts = [f"{k}: {node.meta[k]}" for k in additional_meta if k in node.meta]
        if parts:
            extra = f"# {', '.join(parts)} "
    where = "No stacktrace found for following nodes"
    lines = (node.stack_trace or "").strip().splitlines()
    for i in range(len(lines) - 1, -1, -1):
        ln = lines[i].strip()
        if ln.startswith("File "):   # File "f.py", line 3, in forward / the code line
            parts = [p.strip() for p in ln.split(",")]
            file = parts[0][len("File "):].strip('"')
            line = parts[1].split()[-1] if len(parts) > 1 else "?"
            fn = parts[2].split()[-1] if len(parts) > 2 else "?"
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            where = f"File: {file}:{line} in {fn}, code: {code}"
            break
    return f"{extra}# {where}"


def generate(graph, root_module="self", verbose=False, include_stride=False,
             include_device=False, colored=False, expanded_def=False, record_func=False,
             additional_meta=None):
    """The ``forward`` source of ``graph``.  ``verbose`` annotates values with their dtype and
    shape (strides and device on request) and heads each run of nodes with its source line;
    ``record_func`` brackets the graph and each call in profiler ``record_function`` ranges
    ("## <node index> ##"); ``expanded_def`` puts one parameter per line; ``colored`` adds
    ANSI colours."""
    paint = _painter(colored)
    codegen = graph._codegen
    nodes = list(graph.nodes)
    g = _Globals({n.name for n in nodes} | {f"_rf_{n.name}" for n in nodes} | {"_rf"})
    g.paint = paint
    sizes = _size_bindings(nodes) if _symbolic_sizes_used(nodes) else []
    g.sizes_bound = bool(sizes)
    last_use = {}
    for n in reversed(nodes):
        for inp in n.all_input_nodes:
            if inp not in last_use:
                last_use[inp] = n
    frees = {}
    for inp, user in last_use.items():
        frees.setdefault(user, []).append(inp)
    sig = [root_module]
    body = []
    wrapped = {}   # global names of wrap()ped functions, in first-call order
    lineno_map = {}
    rf = None
    if record_func:
        from ..autograd.profiler import record_function
        rf = g.name_of(record_function)
        body.append(f"_rf = {rf}('## ENTER_GRAPH_PLACEHOLDER_KEY ##'); _rf.__enter__()")
    summary = None
    for i, n in enumerate(nodes):
        note = _annotation(n, paint, include_stride, include_device) if verbose else ""
        if n.op == "placeholder":
            t = n.target
            default = f" = {_repr(n.args[0], g)}" if n.args else ""
            sig.append(f"{t}{note}{default}")
            if t.lstrip("*") != n.name:
                body.append(f"{n.name} = {t.lstrip('*')}")
            continue
        if sizes:   # after the placeholders, before their first use
            body.extend(sizes)
            sizes = []
        if verbose and n.op != "output":
            text = _stack_summary(n, additional_meta)
            if text != summary:
                if summary is not None:
                    body.append("")  # a blank line between runs, as torch prints them
                summary = text
                body.append(paint("dim", text))
        if n.op == "output":
            if rf is not None:
                body.append("_rf.__exit__(None, None, None)")
            lineno_map[len(body) + 2] = n.name
            body.append(codegen.generate_output(n.args[0] if n.args else None,
                                                repr_fn=lambda a: _repr(a, g)))
            continue
        timed = rf is not None and n.op in ("call_function", "call_method", "call_module")
        if timed:
            body.append(f"_rf_{n.name} = {rf}('## {i} ##'); _rf_{n.name}.__enter__()")
        lineno_map[len(body) + 2] = n.name
        line = f"{n.name}{note} = {_expr(n, root_module, g)}"
        if n.op == "call_function" and n.meta.get("is_wrapped"):
            wrapped.setdefault(g.name_of(n.target))
        dead = [x.name for x in frees.get(n, []) if x.op != "output"]
        if dead:
            line += ";  " + paint("dim", " = ".join(dead) + " = None")
        body.append(line)
        if timed:
            body.append(f"_rf_{n.name}.__exit__(None, None, None)")
    if not body or not body[-1].startswith("return"):
        if rf is not None:
            body.append("_rf.__exit__(None, None, None)")
        body.append("return None")
    if codegen._body_transformer is not None:
        body = [ln.rstrip("\n") for ln in codegen._body_transformer([b + "\n" for b in body])]
    for name, obj in codegen.additional_globals():
        g.globals[name] = obj
    params = sig[1:] if sig[0] == "self" else sig
    head = codegen.gen_fn_def([root_module] + params if root_module != "self" else params,
                              "", expanded_def=expanded_def) + "\n"
    # torch's prelude: the module re-wraps its wrapped functions, so tracing it keeps them
    # leaves; a dotted name (math.sqrt) is no global to patch, autowrap covers it
    prelude = [f'{g._module("ember", ember_namespace())}.fx.wrap("{w}")' for w in wrapped
               if w.isidentifier()]
    src = "\n" + "\n".join(prelude) + "\n\n" + head + "\n".join("    " + b for b in body) + \
        "\n    "
    shift = head.count("\n") + 2 + max(len(prelude) - 1, 0)
    return PythonCode(src, g.globals, {k + shift: v for k, v in lineno_map.items()},
                      imports=g.import_block())
