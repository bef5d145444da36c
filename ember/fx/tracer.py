"""Symbolic tracing: run a Module's forward on Proxies and record a Graph.

ember's own API needs no patching: every public function of ``ember``,
``ember.nn.functional``, ``ember.linalg``, ``ember.fft`` and ``ember.special`` and
every Tensor method hands a call with a Proxy anywhere in its arguments to
``Proxy.__ember_function__`` (the ``__ember_function__`` protocol, checked while a
Proxy is alive), which records one node -- also through references users stored
before tracing.

What the protocol cannot reach is patched while tracing and restored afterwards:
``Module.__call__`` and ``Module.__getattr__`` (leaf submodules become call_module
nodes, parameters get_attr nodes), and user or third-party functions marked with
`wrap` or listed in ``autowrap_modules``/``autowrap_functions`` (``math`` by
default), patched where they are looked up to record a call_function node when any
argument is a Proxy.
"""
import builtins
import functools
import inspect
import math

from .._core.tensor import Tensor
from .graph import Graph
from .node import Node, has_side_effect, map_aggregate
from .proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TraceError

__all__ = ["Tracer", "TracerBase", "symbolic_trace", "wrap", "GraphAppendingTracer",
           "TraceError", "is_fx_tracing"]

_BASE_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))
# (id(globals), name) -> globals dict, registered by wrap(); keyed so that re-running a
# GraphModule's code, whose prelude calls wrap() again, registers nothing new
_wrapped_fns_to_patch = {}
_is_tracing = [0]
_WRAPPERS = {}


def is_fx_tracing():
    """True while symbolic tracing is running."""
    return _is_tracing[0] > 0


def wrap(fn_or_name):
    """Keep a module-level function a leaf while tracing: calls with Proxy arguments
    become call_function nodes instead of being traced through. Call at module scope."""
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    if callable(fn_or_name):
        name = fn_or_name.__name__
        if name == "<lambda>":
            raise NotImplementedError("wrap() does not support lambdas; use a named function")
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise TypeError("wrap expects a function or the name of a function")
    _wrapped_fns_to_patch[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _find_proxy(args, kwargs):
    found = []

    def look(a):
        if not found and isinstance(a, Proxy):
            found.append(a)
    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None


def _leaf_wrapper(orig):
    w = _WRAPPERS.get(id(orig))
    if w is not None and w.__fx_orig__ is orig:
        return w

    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        p = _find_proxy(args, kwargs)
        if p is not None:
            proxy = p.tracer.create_proxy("call_function", orig, args, kwargs)
            # codegen re-registers it with wrap(), so a retrace keeps it a leaf
            proxy.node.meta["is_wrapped"] = True
            return proxy
        return orig(*args, **kwargs)
    wrapped.__fx_orig__ = orig
    _WRAPPERS[id(orig)] = wrapped
    return wrapped


class _Patcher:
    def __init__(self):
        self._undo = []
        self._seen = set()

    def patch_dict(self, d, name, new):
        key = (id(d), name)
        if key in self._seen:
            return
        self._seen.add(key)
        had = name in d
        old = d.get(name)
        d[name] = new
        self._undo.append(lambda: d.__setitem__(name, old) if had else d.pop(name, None))

    def patch_attr(self, obj, name, new):
        key = (id(obj), name)
        if key in self._seen:
            return
        self._seen.add(key)
        old = obj.__dict__[name]
        setattr(obj, name, new)
        self._undo.append(lambda: setattr(obj, name, old))

    def restore(self):
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        self._seen.clear()


@has_side_effect
def _assert_is_concrete(value, expected, name):
    """Guard of an input specialised with concrete_args (kept in the graph)."""
    if value is not expected and value != expected:
        raise AssertionError(f"{name} has been specialized to have value {expected!r} but got "
                             f"another value {value!r}")


class TracerBase:
    """What every tracer shares: turning (kind, target, args, kwargs) into Nodes of
    ``self.graph`` and their Proxies, and converting Python values into graph arguments.
    `Tracer` adds module tracing; a subclass of this one that sets ``graph`` can build
    graphs from Proxies directly."""
    graph = None
    record_stack_traces = False
    check_mutable_operations = False
    trace_asserts = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"
    scope = None
    module_stack = None
    node_name_to_scope = None

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.scope is not None and self.node_name_to_scope is not None:
            self.node_name_to_scope[node.name] = (self.scope.module_path, self.scope.module_type)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Create a Node from (kind, target, args, kwargs) and return its Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces:
            import traceback
            node.stack_trace = "".join(traceback.format_stack()[:-1])
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    def create_arg(self, a):
        """Turn a Python value into a graph argument (Proxies -> Nodes, tensors -> get_attr)."""
        if hasattr(type(a), "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, Tensor):
            return self._tensor_arg(a)
        if isinstance(a, tuple):
            t = tuple(self.create_arg(x) for x in a)
            return type(a)(*t) if hasattr(a, "_fields") else t
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if isinstance(self.create_arg(k), Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return a
        if isinstance(a, _BASE_TYPES) or callable(a):
            return a
        from .._core.device import device
        from .._core.dtype import dtype
        if isinstance(a, (dtype, device)):
            return a
        import enum
        if isinstance(a, enum.Enum):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def _tensor_arg(self, t):
        return t  # no module to hold a constant: the tensor itself is the argument

    def to_bool(self, obj):
        """What ``bool(proxy)`` gives: tracing cannot know it."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def iter(self, obj):
        """What iterating a proxy gives: tracing cannot know its length."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument.")

    def keys(self, obj):
        """``proxy.keys()`` (for ``**proxy``): a call_method node."""
        return self.create_proxy("call_method", "keys", (obj,), {})


class Tracer(TracerBase):
    """Turns a Module or function into a Graph by running it on Proxies.

    Override `is_leaf_module` to choose which submodules stay opaque (ember.nn
    modules do by default), `create_arg` for custom argument types, `call_module` /
    `getattr` to change how submodules and parameters are recorded."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        self._autowrap_function_ids = {
            id(v) for m in autowrap_modules for k, v in vars(m).items()
            if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.proxy_buffer_attributes = False
        self.record_stack_traces = False
        self.graph = None
        self.root = None
        self.submodule_paths = None
        self.tensor_attrs = {}
        self._param_nodes = {}
        self.scope = Scope("", None)  # the module whose forward is being traced
        self.module_stack = {}
        self.node_name_to_scope = {}

    # ---- leaves --------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """ember.nn's own modules (not containers) are leaves; user modules are traced."""
        from ..nn import Sequential
        mod = type(m).__module__
        return (mod.startswith("ember.nn.") or mod.startswith("ember.ao.nn.")) and \
            not isinstance(m, Sequential)

    def path_of_module(self, mod):
        """Qualified name of ``mod`` in the root module."""
        if self.submodule_paths is None:
            self.submodule_paths = {}
            for name, m in self.root.named_modules(remove_duplicate=False):
                self.submodule_paths.setdefault(id(m), name)
        path = self.submodule_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """Record a call_module node for a leaf, or trace through ``forward`` otherwise."""
        qualname = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(qualname, type(m))):
            if not self.is_leaf_module(m, qualname):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """What reading ``module.attr`` gives while tracing (a get_attr Proxy for parameters)."""
        from ..nn import Parameter
        if isinstance(attr_val, Parameter) or (self.proxy_buffer_attributes and
                                               isinstance(attr_val, Tensor)):
            name = self.tensor_attrs.get(id(attr_val))
            if name is None:
                return attr_val
            if name not in parameter_proxy_cache:
                factory = None
                if self.param_shapes_constant and isinstance(attr_val, Parameter):
                    def factory(node, n=name, v=attr_val):
                        return ParameterProxy(self, node, n, v)
                parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {},
                                                                proxy_factory_fn=factory)
            return parameter_proxy_cache[name]
        return attr_val

    def _tensor_arg(self, t):
        name = self.tensor_attrs.get(id(t))
        if name is None:
            if self.root is None:
                return t  # no module to hold it: the tensor itself is the argument
            i = 0
            while hasattr(self.root, f"_tensor_constant{i}"):
                i += 1
            name = f"_tensor_constant{i}"
            setattr(self.root, name, t)
            self.tensor_attrs[id(t)] = name
        node = self._param_nodes.get(name)
        if node is None or node._erased:
            node = self._param_nodes[name] = self.create_node("get_attr", name, (), {})
        return node

    # ---- the trace -------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """Trace ``root`` (a Module or a function) and return the recorded Graph."""
        from ..nn import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            fn_globals = fn.__globals__
            bound = True
        else:
            self.root = Module()
            fn = root
            fn_globals = getattr(fn, "__globals__", {})
            bound = False
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = None
        self._param_nodes = {}
        self.tensor_attrs = _collect_tensor_attrs(self.root)
        concrete_args = dict(concrete_args or {})
        args = self._placeholders(fn, bound, concrete_args)
        patcher = _Patcher()
        parameter_proxy_cache = {}
        orig_call, orig_getattr = Module.__call__, Module.__getattr__
        tracer = self

        def module_getattr_wrapper(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

        def module_call_wrapper(mod, *args, **kwargs):
            def forward(*a, **k):
                return orig_call(mod, *a, **k)
            fwd = getattr(type(mod), "forward", None)
            tracer._autowrap_check(patcher, getattr(fwd, "__globals__", {}))
            return tracer.call_module(mod, forward, args, kwargs)

        _is_tracing[0] += 1
        try:
            patcher.patch_attr(Module, "__call__", module_call_wrapper)
            patcher.patch_attr(Module, "__getattr__", module_getattr_wrapper)
            self._patch_wrapped(patcher)
            self._autowrap_check(patcher, fn_globals)
            for module in self._autowrap_search:
                self._autowrap_check(patcher, vars(module))
            result = fn(self.root, *args) if bound else fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))
        finally:
            _is_tracing[0] -= 1
            patcher.restore()
        self.submodule_paths = None
        return self.graph

    def _placeholders(self, fn, bound, concrete_args):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if bound else 0:]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise TraceError(f"concrete_args names {sorted(unknown)} are not parameters of "
                             f"{getattr(fn, '__qualname__', fn)}")
        args = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TraceError(f"symbolic_trace does not support *args/**kwargs in the traced "
                                 f"signature ('{p.name}'); give the inputs names or pass "
                                 f"concrete_args")
            if p.name in concrete_args:
                v = concrete_args[p.name]
                if isinstance(v, (type(None), bool, int, float, str)):
                    ph = self.create_proxy("placeholder", p.name, (v,), {})
                    self.create_proxy("call_function", _assert_is_concrete,
                                      (ph, v, p.name), {})
                else:
                    self.create_proxy("placeholder", p.name, (None,), {})
                args.append(v)
                continue
            default = () if p.default is p.empty else (p.default,)
            args.append(self.create_proxy("placeholder", p.name, default, {}))
        return args

    def _patch_wrapped(self, patcher):
        for (_, name), g in list(_wrapped_fns_to_patch.items()):
            orig = g[name] if name in g else getattr(builtins, name, None)
            if orig is not None and not hasattr(orig, "__fx_orig__"):
                patcher.patch_dict(g, name, _leaf_wrapper(orig))
        for fn in self._autowrap_functions:
            self._autowrap_function_ids.add(id(fn))

    def _autowrap_check(self, patcher, fn_globals):
        """Patch names in ``fn_globals`` bound to autowrapped functions."""
        ids = self._autowrap_function_ids
        explicit = {id(f) for f in self._autowrap_functions}
        for name, value in list(fn_globals.items()):
            if callable(value) and id(value) in ids and (not name.startswith("_") or
                                                         id(value) in explicit):
                patcher.patch_dict(fn_globals, name, _leaf_wrapper(value))


def _collect_tensor_attrs(root):
    out = {}
    for prefix, m in root.named_modules():
        pre = prefix + "." if prefix else ""
        for d in (m._parameters, m._buffers, m.__dict__):
            for k, v in d.items():
                if isinstance(v, Tensor):
                    out.setdefault(id(v), pre + k)
    return out


def symbolic_trace(root, concrete_args=None):
    """Symbolically trace ``root`` (a Module or function) into a GraphModule.

    ``concrete_args`` maps parameter names to values the trace specialises on (for
    example a flag that decides an ``if``)."""
    from .graph_module import GraphModule
    from ..nn import Module
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


class GraphAppendingTracer(Tracer):
    """A tracer that appends the operations done on its Proxies to an existing ``graph``
    (``Proxy(graph.placeholder('x'), GraphAppendingTracer(graph))``), as in torch's
    graph-building recipes."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
