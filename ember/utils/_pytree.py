"""``ember.utils._pytree``: torch.utils._pytree's API, which libraries import by torch's
path (``from torch.utils import _pytree``: ema-pytorch, x-transformers, pyro).

A pytree is a nest of containers -- tuple, list, dict, namedtuple, OrderedDict,
defaultdict, deque and the classes registered with `register_pytree_node` -- around
leaves; anything else, None included (as in torch 2.13), is a leaf. Dict keys keep their
insertion order; trees mapped together must hold the same keys, in any order.

Custom classes share one registry with `ember.func._pytree` (what vmap, grad and export
flatten with), so a class registered through either module is a node to both."""
import collections
import json
import types
from collections import OrderedDict, defaultdict, deque, namedtuple

from .._core.tensor import Size
from ..func._pytree import _REGISTRY, register_dataclass  # noqa: F401
from ..func._pytree import GetAttrKey, MappingKey, SequenceKey, register_pytree_node

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "DumpableContext",
           "ToDumpableContextFn", "FromDumpableContextFn", "PyTreeSpec", "TreeSpec", "LeafSpec",
           "keystr", "key_get", "register_pytree_node", "tree_is_leaf", "tree_flatten",
           "tree_flatten_with_path", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_leaves_with_path", "tree_structure", "tree_map", "tree_map_with_path",
           "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "treespec_dumps", "treespec_loads",
           "treespec_pprint", "is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance"]

PyTree = Context = FlattenFn = UnflattenFn = DumpableContext = object
ToDumpableContextFn = FromDumpableContextFn = object
KeyPath = tuple


# ---- key paths -------------------------------------------------------------------------

KeyEntry = (SequenceKey, MappingKey, GetAttrKey)


def keystr(kp):
    """A key path as the Python accessor string it stands for (``['a'][0].x``)."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp):
    """The subtree of ``obj`` at key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj


# ---- nodes -----------------------------------------------------------------------------

class NodeDef(collections.namedtuple("NodeDef", "type flatten_fn unflatten_fn "
                                                "flatten_with_keys_fn")):
    """How a node type flattens (torch.utils._pytree.NodeDef)."""


def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and \
        isinstance(getattr(cls, "_fields", None), tuple) and callable(getattr(cls, "_make", None))


def is_namedtuple(obj):
    """Whether ``obj`` is a namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


def _seq_keys(children):
    return [(SequenceKey(i), c) for i, c in enumerate(children)]


def _map_keys(values, keys):
    return [(MappingKey(k), v) for k, v in zip(keys, values)]


def _dict_flatten(d):
    return list(d.values()), list(d.keys())


def _namedtuple_flatten(t):
    return list(t), type(t)


def _defaultdict_flatten(d):
    return list(d.values()), [d.default_factory, list(d.keys())]


def _deque_flatten(d):
    return list(d), d.maxlen


# type -> (flatten, unflatten, keys of (children, context)): the builtin nodes; the
# namedtuple node is keyed by ``collections.namedtuple``, as torch keys it
_BUILTINS = {
    tuple: (lambda t: (list(t), None), lambda c, _: tuple(c), lambda c, _: _seq_keys(c)),
    list: (lambda t: (list(t), None), lambda c, _: list(c), lambda c, _: _seq_keys(c)),
    dict: (_dict_flatten, lambda c, k: dict(zip(k, c)), _map_keys),
    namedtuple: (_namedtuple_flatten, lambda c, cls: cls(*c),
                 lambda c, cls: [(GetAttrKey(f), v) for f, v in zip(cls._fields, c)]),
    OrderedDict: (_dict_flatten, lambda c, k: OrderedDict(zip(k, c)), _map_keys),
    defaultdict: (_defaultdict_flatten,
                  lambda c, ctx: defaultdict(ctx[0], dict(zip(ctx[1], c))),
                  lambda c, ctx: _map_keys(c, ctx[1])),
    deque: (_deque_flatten, lambda c, maxlen: deque(c, maxlen=maxlen),
            lambda c, _: _seq_keys(c)),
    Size: (lambda t: (list(t), None), lambda c, _: Size(c), lambda c, _: _seq_keys(c)),
}
_DICTS = (dict, OrderedDict, defaultdict)


def _with_keys(builtin):
    flatten, _, keys = builtin

    def flatten_with_keys(tree):
        children, context = flatten(tree)
        return keys(children, context), context
    return flatten_with_keys


class _SupportedNodes(collections.abc.Mapping):
    """``SUPPORTED_NODES``: node type -> `NodeDef`, the builtin containers and every class
    registered here or with `ember.func._pytree` / ``ember.export.register_dataclass``."""

    def __getitem__(self, cls):
        if cls in _BUILTINS:
            flatten, unflatten, _ = _BUILTINS[cls]
            return NodeDef(cls, flatten, unflatten, _with_keys(_BUILTINS[cls]))
        entry = _REGISTRY[cls]
        return NodeDef(cls, entry[0], entry[1], entry[3])

    def __iter__(self):
        yield from _BUILTINS
        yield from list(_REGISTRY)

    def __len__(self):
        return len(_BUILTINS) + len(_REGISTRY)

    def __contains__(self, cls):
        return cls in _BUILTINS or cls in _REGISTRY


SUPPORTED_NODES = _SupportedNodes()


def _register_pytree_node(cls, flatten_fn, unflatten_fn, to_str_fn=None,
                          maybe_from_str_fn=None, *, serialized_type_name=None,
                          to_dumpable_context=None, from_dumpable_context=None,
                          flatten_with_keys_fn=None):
    """The deprecated spelling of `register_pytree_node` (still called by libraries)."""
    import warnings
    warnings.warn("`torch.utils._pytree._register_pytree_node` is deprecated. Please use "
                  "`torch.utils._pytree.register_pytree_node` instead.", FutureWarning,
                  stacklevel=2)
    if to_str_fn is not None or maybe_from_str_fn is not None:
        warnings.warn("`to_str_fn` and `maybe_from_str_fn` is deprecated. Please use "
                      "`to_dumpable_context` and `from_dumpable_context` instead.",
                      FutureWarning, stacklevel=2)
    register_pytree_node(cls, flatten_fn, unflatten_fn,
                         serialized_type_name=serialized_type_name,
                         to_dumpable_context=to_dumpable_context,
                         from_dumpable_context=from_dumpable_context,
                         flatten_with_keys_fn=flatten_with_keys_fn)


def _node_type(tree):
    cls = type(tree)
    return namedtuple if is_namedtuple_class(cls) else cls


def tree_is_leaf(tree, is_leaf=None):
    """Whether ``tree`` is a leaf: not a node type, or picked by ``is_leaf``."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


def _is_leaf(tree, is_leaf=None):
    """The deprecated spelling of `tree_is_leaf`."""
    import warnings
    warnings.warn("torch.utils._pytree._is_leaf is private and will be removed in a future "
                  "release. Please use torch.utils._pytree.tree_is_leaf instead.",
                  FutureWarning, stacklevel=2)
    return tree_is_leaf(tree, is_leaf)


# ---- specs -----------------------------------------------------------------------------

class TreeSpec:
    """The structure of a pytree: the root node's ``type`` (None for a leaf), its
    ``context`` (dict keys, namedtuple class, ...) and the specs of its children."""
    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type, context, children_specs):
        self.type, self._context, self._children = type, context, list(children_specs)
        if type is None:
            if context is not None or self._children:
                raise AssertionError("leaf node should not have a context or children")
            self.num_nodes = self.num_leaves = 1
        else:
            self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
            self.num_leaves = sum(c.num_leaves for c in self._children)
        self.num_children = len(self._children)

    @property
    def context(self):
        return self._context

    @property
    def children_specs(self):
        return self._children

    def children(self):
        return list(self._children)

    def child(self, index):
        return self._children[index]

    def is_leaf(self):
        return self.num_nodes == 1 and self.num_leaves == 1

    def __repr__(self, indent=0):
        if self.is_leaf():
            return "*"
        indent += 2
        inner = f",\n{' ' * indent}".join(c.__repr__(indent) for c in self._children)
        return f"TreeSpec({self.type.__name__}, {self._context}, [{inner}])"

    def __eq__(self, other):
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return self is other or (str(self.type) == str(other.type)
                                 and self._context == other._context
                                 and self._children == other._children)

    def __hash__(self):
        ctx = self._context
        if self.type is defaultdict:
            ctx = (ctx[0], tuple(ctx[1]))
        elif self.type in (dict, OrderedDict):
            ctx = tuple(ctx)
        elif self.type is not None and self.type not in _BUILTINS:
            ctx = None   # a custom context need not be hashable
        return hash((self.type, ctx, tuple(self._children)))

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` at this spec's leaves; ValueError where ``tree``'s
        nodes differ from this spec's (dicts may hold their keys in another order)."""
        out = []
        self._up_to(tree, out)
        return out

    def _up_to(self, node, out):
        if self.is_leaf():
            out.append(node)
            return
        got = _node_type(node)
        if self.type not in _BUILTINS:
            if got != self.type:
                raise ValueError(f"Type mismatch; expected {self.type!r}, but got {got!r}.")
            children, context = SUPPORTED_NODES[got].flatten_fn(node)
            if len(children) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got "
                                 f"{len(children)}.")
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        else:
            dicts = self.type in _DICTS and got in _DICTS
            if not dicts and got != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got "
                                 f"{got!r}.")
            if len(node) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got "
                                 f"{len(node)}.")
            if dicts:
                keys = self._context[1] if self.type is defaultdict else self._context
                missing, extra = set(keys) - set(node), set(node) - set(keys)
                if missing or extra:
                    raise ValueError("Node keys mismatch"
                                     + (f"; missing key(s): {missing}" if missing else "")
                                     + (f"; extra key(s): {extra}" if extra else "") + ".")
                children = [node[k] for k in keys]
            else:
                children, context = _BUILTINS[got][0](node)
                if got is not deque and context != self._context:
                    raise ValueError(f"Node context mismatch for node type {self.type!r}; "
                                     f"expected {self._context!r}, but got {context!r}.")
        for child, spec in zip(children, self._children):
            spec._up_to(child, out)

    def unflatten(self, leaves):
        """The pytree of this structure holding ``leaves``."""
        leaves = leaves if isinstance(leaves, (list, tuple)) else list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        it = iter(leaves)
        return self._build(it)

    def _build(self, it):
        if self.is_leaf():
            return next(it)
        children = [c._build(it) for c in self._children]
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


PyTreeSpec = TreeSpec


class LeafSpec(TreeSpec):
    """The spec of a leaf (``*``)."""
    __slots__ = ()

    def __init__(self):
        super().__init__(None, None, [])


_LEAF = LeafSpec()


def treespec_leaf():
    return _LEAF


def _flatten(tree, is_leaf, leaves, paths, path):
    """Append ``tree``'s leaves (and with ``paths`` a list, their key paths) and return
    its spec."""
    if tree_is_leaf(tree, is_leaf):
        leaves.append(tree)
        if paths is not None:
            paths.append(path)
        return _LEAF
    cls = _node_type(tree)
    node = SUPPORTED_NODES[cls]
    if paths is None:
        children, context = node.flatten_fn(tree)
        keys = [None] * len(children)
    else:
        if node.flatten_with_keys_fn is None:
            raise ValueError(f"Did not find a flatten_with_keys_fn for type: {cls}. Please "
                             f"pass a flatten_with_keys_fn argument to register_pytree_node.")
        pairs, context = node.flatten_with_keys_fn(tree)
        keys, children = [k for k, _ in pairs], [c for _, c in pairs]
    specs = [_flatten(c, is_leaf, leaves, paths, path + (k,) if paths is not None else path)
             for k, c in zip(keys, children)]
    return TreeSpec(cls, context, specs)


def tree_flatten(tree, is_leaf=None):
    """``(leaves, spec)`` of ``tree``: its leaves in order and its structure."""
    leaves = []
    spec = _flatten(tree, is_leaf, leaves, None, ())
    return leaves, spec


def tree_flatten_with_path(tree, is_leaf=None):
    """``([(key_path, leaf)], spec)``: each leaf with the keys that lead to it."""
    leaves, paths = [], []
    spec = _flatten(tree, is_leaf, leaves, paths, ())
    return list(zip(paths, leaves)), spec


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_unflatten(leaves, treespec):
    """The pytree of structure ``treespec`` holding ``leaves``."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance "
                        f"of TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    """The leaves of ``tree``, lazily, in flattening order."""
    if tree_is_leaf(tree, is_leaf):
        yield tree
        return
    for child in SUPPORTED_NODES[_node_type(tree)].flatten_fn(tree)[0]:
        yield from tree_iter(child, is_leaf)


def tree_leaves(tree, is_leaf=None):
    return list(tree_iter(tree, is_leaf))


def arg_tree_leaves(*args, **kwargs):
    """The leaves of ``args`` then of ``kwargs``' values (``tree_leaves((args, kwargs))``)."""
    return [x for a in (*args, *kwargs.values()) for x in tree_iter(a)]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def _columns(tree, rests, is_leaf):
    leaves, spec = tree_flatten(tree, is_leaf)
    return spec, [leaves] + [spec.flatten_up_to(r) for r in rests]


def tree_map(func, tree, *rests, is_leaf=None):
    """``tree`` with each leaf ``x`` replaced by ``func(x, *ys)``, the ``ys`` being the
    subtrees of ``rests`` at the same place (they must have ``tree``'s nodes)."""
    spec, cols = _columns(tree, rests, is_leaf)
    return spec.unflatten([func(*xs) for xs in zip(*cols)])


def tree_map_(func, tree, *rests, is_leaf=None):
    """`tree_map` for ``func``'s side effects: calls it on every leaf, returns ``tree``."""
    _, cols = _columns(tree, rests, is_leaf)
    for xs in zip(*cols):
        func(*xs)
    return tree


def _only(type_or_pred):
    if isinstance(type_or_pred, (type, tuple, types.UnionType)):
        return lambda x: isinstance(x, type_or_pred)
    if callable(type_or_pred):
        return type_or_pred
    raise TypeError(f"Unexpected type_or_types_or_pred: {type_or_pred!r}")


def _map_only(func, type_or_pred):
    pred = _only(type_or_pred)
    return lambda x: func(x) if pred(x) else x


def tree_map_only(type_or_types_or_pred, /, func, tree, is_leaf=None):
    """`tree_map` of ``func`` over the leaves of the given types (or passing a
    predicate); the other leaves stay as they are."""
    return tree_map(_map_only(func, type_or_types_or_pred), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, /, func, tree, is_leaf=None):
    return tree_map_(_map_only(func, type_or_types_or_pred), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred, tree, is_leaf=None):
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, /, pred, tree, is_leaf=None):
    keep = _only(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if keep(x))


def tree_any_only(type_or_types, /, pred, tree, is_leaf=None):
    keep = _only(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if keep(x))


def tree_map_with_path(func, tree, *rests, is_leaf=None):
    """`tree_map` whose ``func`` also gets each leaf's key path first."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    cols = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(kp, x, *ys) for (kp, x), *ys in zip(pairs, *cols)])


# ---- serialization (torch's protocol 1 JSON) -------------------------------------------

def _defaultdict_to_json(context):
    factory, keys = context
    return {"default_factory_module": factory.__module__,
            "default_factory_name": factory.__qualname__, "dict_context": keys}


def _defaultdict_from_json(d):
    import importlib
    factory = getattr(importlib.import_module(d["default_factory_module"]),
                      d["default_factory_name"])
    return [factory, d["dict_context"]]


# type -> (serialized name, to_dumpable_context, from_dumpable_context): torch's names
_BUILTIN_SERDE = {tuple: ("builtins.tuple", None, None), list: ("builtins.list", None, None),
                  dict: ("builtins.dict", None, None),
                  OrderedDict: ("collections.OrderedDict", None, None),
                  defaultdict: ("collections.defaultdict", _defaultdict_to_json,
                                _defaultdict_from_json),
                  deque: ("collections.deque", None, None)}


def _serde(cls):
    if cls in _BUILTIN_SERDE:
        return _BUILTIN_SERDE[cls]
    entry = _REGISTRY.get(cls)
    if entry is None or entry[2] is None:
        raise NotImplementedError(f"No registered serialization name for {cls} found. "
                                  f"Please update your register_pytree_node call with a "
                                  f"`serialized_type_name` kwarg.")
    return entry[2], entry[4], entry[5]


def _to_json(spec):
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    name, to_ctx, _ = _serde(spec.type)
    if to_ctx is not None:
        context = to_ctx(spec.context)
    else:
        try:
            context = json.dumps(spec.context)
        except TypeError as e:
            raise TypeError("Unable to serialize context. Please make the context json "
                            "dump-able, or register a custom serializer using "
                            "register_pytree_node.") from e
    return {"type": name, "context": context,
            "children_spec": [_to_json(c) for c in spec._children]}


def _from_json(d):
    if d["type"] is None and d["context"] is None and not d["children_spec"]:
        return _LEAF
    by_name = {n: t for t, (n, _, _) in _BUILTIN_SERDE.items()}
    by_name.update((e[2], t) for t, e in _REGISTRY.items() if e[2] is not None)
    if d["type"] not in by_name:
        raise NotImplementedError(f"Deserializing {d['type']} in pytree is not registered.")
    cls = by_name[d["type"]]
    from_ctx = _serde(cls)[2]
    context = from_ctx(d["context"]) if from_ctx is not None else json.loads(d["context"])
    return TreeSpec(cls, context, [_from_json(c) for c in d["children_spec"]])


def treespec_dumps(treespec, protocol=None):
    """``treespec`` as a JSON string (torch's protocol 1 format)."""
    protocol = 1 if protocol is None else protocol
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return json.dumps([protocol, _to_json(treespec)])


def treespec_loads(serialized):
    """The spec `treespec_dumps` wrote."""
    protocol, schema = json.loads(serialized)
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return _from_json(schema)


def treespec_pprint(treespec):
    """``treespec`` drawn as a pytree of ``*`` leaves (``TreeSpec(...)`` for one that
    cannot be rebuilt)."""
    class _Star(str):
        def __repr__(self):
            return "*"
    return repr(treespec.unflatten([_Star("*")] * treespec.num_leaves))
