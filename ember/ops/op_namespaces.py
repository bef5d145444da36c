"""``ember.ops.<namespace>.<op>.<overload>``: torch's operator handles (``torch.ops``).

``ember.ops.aten.add`` is an `OpOverloadPacket`; ``ember.ops.aten.add.Tensor`` (and
``.default``, ``.Scalar``, ``.out``...) an `OpOverload` with its `FunctionSchema`
(``_schema``).  Calling either runs ember's implementation of that operator.  The overloads
are hashable and compare by identity, so they serve as keys of decomposition tables
(``table[ember.ops.aten.conv2d.default] = fn``).

An ember `Op` whose name is an aten operator stands for that operator's primary overload
(`overload_of`: the one its table marks, else ``Tensor``, else ``default``): graphs print it
as ``ember.ops.aten.<name>.<overload>``, and the overload compares and hashes equal to the
Op, so ``node.target == ember.ops.aten.add.Tensor`` and tables keyed by overloads work on
the Ops that graphs hold, as they do on torch's export graphs.

The operators of a namespace come from providers registered here by higher layers (the
aten table lives in ``ember.library``, whose public functions sit above this layer), and
from operators defined at run time (``ember.library.custom_op``, ``Library.define``),
which `define_overload` adds.
"""
import importlib.util

from .._core.op import REGISTRY, Op
from .op_schema import parse_schema

__all__ = ["OpOverload", "OpOverloadPacket", "namespace", "register_provider",
           "define_overload", "find_overload", "is_namespace_name", "is_submodule",
           "overload_of"]

# namespace -> provider(op_name) -> {overload_name: (schema text, implementation)} or None
_PROVIDERS = {}
# (namespace, op_name) -> {overload_name: (schema text or FunctionSchema, implementation)}
_DEFINED = {}
_NAMESPACES = {}


class OpOverload:
    """One overload of an operator (torch's ``OpOverload``): ``op(*args, **kwargs)`` runs it;
    ``_schema`` is its `FunctionSchema`; hashable by identity."""

    def __init__(self, packet, overload_name, schema, impl, ember_op=None):
        self._overloadpacket = packet
        self._overloadname = overload_name
        self._opname = packet._opname
        self._namespace = packet._namespace
        self._schema_src = schema
        self._impl = impl
        # the ember operator (`ember._core.op.Op`) this overload runs as one node, if one
        # does (custom ops; aten entries name theirs where the correspondence is exact, and
        # an aten primary overload is its same-named Op); equal to it, with its hash
        self.ember_op = ember_op
        self.__name__ = f"{self._opname}.{overload_name}"
        self.__qualname__ = self.__name__
        self.__module__ = f"ember.ops.{self._namespace}"

    @property
    def _schema(self):
        s = self._schema_src
        if isinstance(s, str):
            s = self._schema_src = parse_schema(s)
        return s

    @property
    def overloadpacket(self):
        return self._overloadpacket

    @property
    def op(self):
        """The callable behind this overload."""
        return self._impl

    @property
    def namespace(self):
        return self._namespace

    def name(self):
        """``"aten::add.Tensor"`` (``"aten::add"`` for the default overload)."""
        base = f"{self._namespace}::{self._opname}"
        return base if self._overloadname == "default" else f"{base}.{self._overloadname}"

    @property
    def is_view(self):
        return any(a.alias_info is not None and not a.is_write for a in self._schema.returns)

    def __call__(self, *args, **kwargs):
        return self._impl(*args, **kwargs)

    def __eq__(self, other):
        return other is self or (self.ember_op is not None and other is self.ember_op)

    def __hash__(self):
        return object.__hash__(self if self.ember_op is None else self.ember_op)

    def __repr__(self):
        return f"<OpOverload(op='{self._namespace}.{self._opname}', " \
               f"overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self._namespace}.{self._opname}.{self._overloadname}"

    def __reduce__(self):
        return (find_overload, (self._namespace, self._opname, self._overloadname))


class OpOverloadPacket:
    """All overloads of one operator name (torch's ``OpOverloadPacket``): attribute access
    gives an `OpOverload` (``.default``, ``.Tensor``...); calling it runs the operator."""

    def __init__(self, namespace, op_name, overloads):
        self._namespace = namespace
        self._opname = op_name
        self._qualified_op_name = f"{namespace}::{op_name}"
        self._table = overloads  # overload name -> (schema, impl[, ember_op])
        self._made = {}
        self.__name__ = op_name
        self.__qualname__ = op_name
        self.__module__ = f"ember.ops.{namespace}"

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        made = self.__dict__["_made"]
        if overload in made:
            return made[overload]
        entry = self._table.get(overload)
        if entry is None:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'")
        schema, impl, *rest = entry
        ember_op = rest[0] if rest else None
        if ember_op is None and self._namespace == "aten" and \
                _primary_overload(self._table) == overload:
            ember_op = REGISTRY.get(self._opname)
        op = made[overload] = OpOverload(self, overload, schema, impl, ember_op)
        return op

    def overloads(self):
        """The overload names (``"default"`` for the one without a name)."""
        return list(self._table)

    def name(self):
        return self._qualified_op_name

    @property
    def op(self):
        return self._default_impl()

    def _default_impl(self):
        entry = self._table.get("default") or next(iter(self._table.values()))
        return entry[1]

    def __call__(self, *args, **kwargs):
        return self._default_impl()(*args, **kwargs)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._table))

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._namespace}.{self._opname}')>"

    def __str__(self):
        return f"{self._namespace}.{self._opname}"


class _OpNamespace:
    """``ember.ops.<name>``: the operators of one namespace, made on first access."""

    def __init__(self, name):
        self.name = name
        self._packets = {}
        self.__name__ = f"ember.ops.{name}"

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = self.__dict__["_packets"].get(op_name)
        if packet is not None:
            return packet
        table = _overloads_of(self.name, op_name)
        if table is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        packet = self._packets[op_name] = OpOverloadPacket(self.name, op_name, table)
        return packet

    def __iter__(self):
        return iter(sorted(self._packets))

    def __repr__(self):
        return f"<module 'ember.ops.{self.name}'>"


def _overloads_of(ns, op_name):
    defined = _DEFINED.get((ns, op_name))
    if defined is not None:
        return defined
    provider = _PROVIDERS.get(ns)
    return provider(op_name) if provider is not None else None


def _primary_overload(table):
    for name, entry in table.items():
        if len(entry) > 2 and entry[2] is not None:
            return name
    for name in ("Tensor", "default"):
        if name in table:
            return name
    return next((n for n in table if n != "out" and not n.endswith("_out")), None)


_OVERLOAD_OF = {}


def overload_of(op):
    """The aten `OpOverload` that ember `Op` ``op`` stands for (its same-named operator's
    primary overload), or None (an ember-internal op, or no aten table loaded yet)."""
    if op.__class__ is not Op:
        return None
    found = _OVERLOAD_OF.get(op.name, False)
    if found is not False:
        return found
    if "aten" not in _PROVIDERS or not op.name.isidentifier():
        return None
    found = None
    table = _overloads_of("aten", op.name)
    if table:
        found = find_overload("aten", op.name, _primary_overload(table))
        if found.ember_op is not op:
            found = None
    _OVERLOAD_OF[op.name] = found
    return found


def register_provider(ns, provider):
    """Let ``provider(op_name)`` answer for namespace ``ns``: a dict overload name ->
    (schema text, implementation[, ember Op]) or None for no such operator."""
    _PROVIDERS[ns] = provider


def define_overload(qualname, overload_name, schema, impl, ember_op=None):
    """Add (or replace) overload ``overload_name`` of ``"ns::op"``; the packet, if made,
    sees it at once."""
    ns, _, op_name = qualname.partition("::")
    table = _DEFINED.setdefault((ns, op_name), {})
    table[overload_name or "default"] = (schema, impl, ember_op)
    packet = namespace(ns)._packets.get(op_name)
    if packet is not None:
        packet._made.pop(overload_name or "default", None)


def namespace(name):
    """The `_OpNamespace` called ``name`` (made on first use, as torch.ops does)."""
    ns = _NAMESPACES.get(name)
    if ns is None:
        ns = _NAMESPACES[name] = _OpNamespace(name)
    return ns


def find_overload(ns, op_name, overload="default"):
    """``ember.ops.<ns>.<op_name>.<overload>`` (AttributeError when there is none)."""
    return getattr(getattr(namespace(ns), op_name), overload)


_SUBMODULES = {}  # name -> whether ember.ops.<name> is a module (asked on attribute misses)


def is_submodule(name):
    """Whether ``ember.ops.<name>`` is a submodule (cached: ``getattr(ember.ops, name,
    None)`` is asked on hot paths and the file system need not be)."""
    found = _SUBMODULES.get(name)
    if found is None:
        found = _SUBMODULES[name] = importlib.util.find_spec(f"{__package__}.{name}") is not None
    return found


def is_namespace_name(name):
    """Whether ``ember.ops.<name>`` is an operator namespace: one with a provider (aten) or
    with operators defined in it.  torch makes an empty namespace for any name; ember
    answers AttributeError for a name nothing defines, so ``getattr(ember.ops, name,
    default)`` keeps meaning "is there such a function" for ember's own code."""
    if not name.isidentifier() or name.startswith("__") or is_submodule(name):
        return False
    return name in _NAMESPACES or name in _PROVIDERS or any(k[0] == name for k in _DEFINED)
