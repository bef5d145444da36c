"""`Proxy`: the stand-in value that records every operation applied to it as a Node.

Operators and methods called on a Proxy, attribute reads (``x.shape``), and the
public ember API (``ember.relu(x)``, ``F.gelu(x)``, ``tensor + x``: routed here by
``__ember_function__``) all append nodes to the tracer's graph.  Using a Proxy
where Python needs a concrete value (``if``, ``bool``, ``len``, iteration) raises
`TraceError` naming the user's source line.
"""
import builtins
import dis
import inspect
import operator
import os

from .._core.state import STATE
from ._namespace import ember_namespace
from .node import map_aggregate

__all__ = ["Proxy", "Attribute", "ParameterProxy", "MetaProxy", "TraceError",
           "GraphAppendingTracer", "TracerBase", "Scope", "ScopeContextManager"]


def __getattr__(name):
    if name in ("GraphAppendingTracer", "TracerBase"):  # defined with the Tracer (which
        from . import tracer                            # imports this module)
        return getattr(tracer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Scope:
    """The module a node was recorded in: its qualified path in the root (``"layer1.0"``,
    ``""`` for the root) and its type.  The tracer keeps the current one in
    ``tracer.scope`` and the scope of each recorded node in ``node_name_to_scope``."""

    def __init__(self, module_path, module_type):
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Sets ``scope`` to ``current_scope``'s module while a submodule's forward is traced
    and restores the previous module on exit."""

    def __init__(self, scope, current_scope):
        self._prev = (scope.module_path, scope.module_type)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self):
        return self._scope

    def __exit__(self, *exc):
        self._scope.module_path, self._scope.module_type = self._prev

_FX_DIR = os.path.dirname(os.path.abspath(__file__))
_EMBER_DIR = os.path.dirname(_FX_DIR)


class TraceError(ValueError):
    """Symbolic tracing met a construct it cannot record (data-dependent control flow...)."""


def _frames():
    """(innermost frame outside ember.fx, innermost frame outside ember): where the
    Proxy was used, and the user's line that led there."""
    f = inspect.currentframe()
    used = user = None
    while f is not None and user is None:
        fn = os.path.abspath(f.f_code.co_filename)
        if used is None and not fn.startswith(_FX_DIR + os.sep):
            used = f
        if not fn.startswith(_EMBER_DIR + os.sep):
            user = f
        f = f.f_back
    return used, user


def _describe(f):
    info = inspect.getframeinfo(f, context=1)
    line = info.code_context[0].strip() if info.code_context else ""
    return f'File "{info.filename}", line {info.lineno}, in {info.function}', line


def _where():
    used, user = _frames()
    if used is None:
        return "", None
    where, line = _describe(used)
    if user is not None and user is not used:
        uwhere, uline = _describe(user)
        where, line = f"{where} ({line}), called from {uwhere}", uline
    return where, line


_METHOD_NAMES = None
_ITEM_FUNCTIONS = {"__getitem__": operator.getitem, "__setitem__": operator.setitem}


def _tensor_method_name(func):
    """The Tensor method name of ``func`` if it is one (``Tensor.add`` -> 'add')."""
    global _METHOD_NAMES
    if _METHOD_NAMES is None:
        from .._core.tensor import Tensor
        names = {}
        for klass in reversed(Tensor.__mro__):
            for k, v in vars(klass).items():
                if callable(v) and not isinstance(v, (type, staticmethod, classmethod)):
                    if id(v) not in names or k == getattr(v, "__name__", None):
                        names[id(v)] = (k, v)
        _METHOD_NAMES = names
    hit = _METHOD_NAMES.get(id(func))
    return hit[0] if hit is not None and hit[1] is func else None


def _is_public(func):
    ember = ember_namespace()
    n = getattr(func, "__name__", "")
    return getattr(ember, n, None) is func or getattr(ember.nn.functional, n, None) is func


class Proxy:
    """A symbolic value during tracing: operations on it become Nodes of ``tracer.graph``.

    While any Proxy is alive, ``STATE.overrides`` is raised, so every public function
    checks its arguments for Proxies (inside lists and keywords too) before touching
    them; eager code pays nothing once the Proxies are gone."""

    def __new__(cls, *args, **kwargs):
        STATE.overrides += 1
        return object.__new__(cls)

    def __del__(self):
        try:
            STATE.overrides -= 1
        except Exception:  # interpreter shutdown: module globals already cleared
            pass

    def __init__(self, node, tracer=None):
        if tracer is None:
            from .tracer import GraphAppendingTracer
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        raise TraceError("a Proxy cannot be deep-copied while tracing (its value is unknown)")

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __iter__(self):
        frame = inspect.currentframe().f_back
        if frame is not None:
            for inst in dis.get_instructions(frame.f_code):
                if inst.offset == frame.f_lasti and inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See "
                         "the ember.fx docs for a more detailed explanation of what types of "
                         "control flow can be traced, and check out the Proxy docstring for "
                         "help troubleshooting Proxy iteration errors")

    def __bool__(self):
        return self._concrete("bool()")

    def __index__(self):
        return self._concrete("an index (__index__)")

    def __int__(self):
        return self._concrete("int()")

    def __float__(self):
        return self._concrete("float()")

    def _concrete(self, what):
        where, line = _where()
        raise TraceError(
            f"symbolically traced variables cannot be used as inputs to control flow: "
            f"'{self.node.name}' was converted to {what} at {where}"
            + (f"\n    {line}" if line else "") +
            "\nWhile tracing, a Proxy stands for a value that is only known when the graph "
            "runs, so an `if`/`while`/`and`/`or`/bool() that depends on it cannot be recorded "
            "(data-dependent control flow). Pass the input that decides it in "
            "symbolic_trace(..., concrete_args={...}) to specialise the graph for one value, "
            "or move the code into a function marked with ember.fx.wrap() or into a leaf "
            "module.")

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call ember.fx.wrap('len') at "
                           "module scope")

    def keys(self):
        return self.tracer.create_proxy("call_method", "keys", (self,), {})

    __hash__ = object.__hash__

    @classmethod
    def __ember_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracers = []

        def find(a):
            if isinstance(a, Proxy) and a.tracer not in tracers:
                tracers.append(a.tracer)
        map_aggregate(args, find)
        map_aggregate(kwargs, find)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {tracers} while trying to "
                               f"trace operations {func}")
        tracer = tracers[0]
        name = _tensor_method_name(func)
        if name is not None and not _is_public(func):
            item = _ITEM_FUNCTIONS.get(name)
            if item is not None:  # tensor[proxy], tensor[i] = proxy: as Python spells them
                return tracer.create_proxy("call_function", item, args, kwargs)
            return tracer.create_proxy("call_method", name, args, kwargs)
        return tracer.create_proxy("call_function", func, args, _user_kwargs(func, kwargs))


_DEFAULTS = {}


def _user_kwargs(func, kwargs):
    """``kwargs`` without the keyword arguments that equal the function's defaults: some
    public functions hand their overrides every keyword (``alpha=1, out=None``), while a
    traced call should record what the user wrote (torch's graphs do; ``replace_pattern``
    matches on it)."""
    if not kwargs:
        return kwargs
    try:
        defaults = _DEFAULTS[func]
    except (KeyError, TypeError):
        try:
            sig = inspect.signature(func)
            defaults = {k: p.default for k, p in sig.parameters.items()
                        if p.default is not inspect.Parameter.empty}
        except (TypeError, ValueError):
            defaults = {}
        try:
            _DEFAULTS[func] = defaults
        except TypeError:
            pass
    out = {}
    for k, v in kwargs.items():
        if k in defaults:
            d = defaults[k]
            if v is d or (type(v) is type(d) and isinstance(v, (bool, int, float, str)) and
                          v == d):
                continue
        out[k] = v
    return out


class Attribute(Proxy):
    """``proxy.attr``: a getattr node (created on first use) or, when called, a method call."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A parameter's Proxy whose shape queries return concrete values
    (``Tracer(param_shapes_constant=True)``)."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    @property
    def ndim(self):
        return self.param.ndim

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _def_magic(name, fn, reflected):
    def impl(self, *args):
        return self.tracer.create_proxy("call_function", fn, (self,) + args, {})
    impl.__name__ = impl.__qualname__ = f"__{name}__"
    setattr(Proxy, impl.__name__, impl)
    if reflected:
        def rimpl(self, other):
            return self.tracer.create_proxy("call_function", fn, (other, self), {})
        rimpl.__name__ = rimpl.__qualname__ = f"__r{name}__"
        setattr(Proxy, rimpl.__name__, rimpl)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift",
              "rshift", "and", "or", "xor"):
    _def_magic(_name, getattr(operator, _name + ("_" if _name in ("and", "or") else "")), True)
for _name in ("lt", "le", "eq", "ne", "gt", "ge", "getitem", "neg", "pos", "invert", "abs"):
    _def_magic(_name, getattr(operator, _name), False)


class MetaProxy(Proxy):
    """A Proxy that also computes each recorded call on example values: the result of running
    the call on the arguments' ``meta['val']`` (inside ``fake_mode``, a context manager such
    as a meta-device scope, if given) becomes the new node's ``meta['val']``."""

    def __init__(self, node, tracer=None, fake_mode=None):
        super().__init__(node, tracer)
        self.fake_mode = fake_mode

    def __repr__(self):
        return f"MetaProxy({self.node.name})"

    @classmethod
    def __ember_function__(cls, func, types, args=(), kwargs=None):
        import contextlib
        kwargs = kwargs or {}
        found = []
        map_aggregate(args, lambda a: found.append(a) if isinstance(a, MetaProxy) else None)
        if not found:
            raise AssertionError("No MetaProxy found in arguments, but one is expected.")
        proxy = Proxy.__ember_function__.__func__(cls, func, types, args, kwargs)
        mode = found[0].fake_mode
        with mode if mode is not None else contextlib.nullcontext():
            def val(a):
                return a.node.meta["val"] if isinstance(a, Proxy) else a
            proxy.node.meta["val"] = func(*map_aggregate(args, val),
                                          **map_aggregate(kwargs, val))
        return MetaProxy(proxy.node, proxy.tracer, mode)

    __torch_function__ = __ember_function__
