"""Minimal pytrees: flatten/unflatten nested tuples, lists, dicts, namedtuples and the
classes registered with `register_pytree_node` (dataclasses through
``ember.export.register_dataclass``).
None is a leaf, as in torch 2.13."""
import collections
import dataclasses

from .._core.tensor import Size

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
           "register_pytree_node", "register_dataclass"]

# The one registry of custom pytree node classes, shared with `ember.utils._pytree`
# (torch.utils._pytree's API): type -> (flatten(obj) -> (children, context),
# unflatten(children, context) -> obj, serialized_type_name, flatten_with_keys(obj) ->
# ([(key, child)], context) or None, to_dumpable_context, from_dumpable_context).
_REGISTRY = {}
# the containers torch.utils._pytree knows without registration (namedtuples too)
_BUILTIN_NODES = (tuple, list, dict, collections.OrderedDict, collections.defaultdict,
                  collections.deque, Size)


# key path entries (torch.utils._pytree's): how a child is reached from its node
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The ``idx``-th child of a sequence: ``[idx]``."""
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """The child under ``key`` of a mapping: ``[key]``."""
    key: object

    def __str__(self):
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The attribute ``name`` of an object: ``.name``."""
    name: str

    def __str__(self):
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Make instances of ``cls`` pytree nodes: ``flatten_fn(obj)`` gives ``(children,
    context)`` with a hashable, comparable context, ``unflatten_fn(children, context)``
    rebuilds the object (torch.utils._pytree.register_pytree_node)."""
    if cls in _REGISTRY or cls in _BUILTIN_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    if (to_dumpable_context is None) != (from_dumpable_context is None):
        raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                         f"be None or registered.")
    _REGISTRY[cls] = (flatten_fn, unflatten_fn, serialized_type_name, flatten_with_keys_fn,
                      to_dumpable_context, from_dumpable_context)


def register_dataclass(cls, *, serialized_type_name=None):
    """A dataclass as a pytree node (torch.export.register_dataclass): its init fields
    are children, except those that are None, which the spec keeps (as torch does)."""
    if not dataclasses.is_dataclass(cls):
        raise ValueError(f"field_names must be specified with a list of all fields used to "
                         f"initialize {cls}, as it is not a dataclass.")
    names = [f.name for f in dataclasses.fields(cls) if f.init]

    def flatten(obj):
        values = [getattr(obj, n) for n in names]
        kept = tuple(n for n, v in zip(names, values) if v is not None)
        none = tuple(n for n, v in zip(names, values) if v is None)
        return [v for v in values if v is not None], (kept, none)

    def unflatten(children, context):
        kept, none = context
        return cls(**dict(zip(kept, children)), **{n: None for n in none})

    def flatten_with_keys(obj):
        children, context = flatten(obj)
        return [(GetAttrKey(n), c) for n, c in zip(context[0], children)], context
    if cls in _REGISTRY:   # torch re-registers a dataclass with a warning
        import warnings
        warnings.warn(f"{cls} is already registered as pytree node. Overwriting the previous "
                      f"registration.", UserWarning, stacklevel=2)
        del _REGISTRY[cls]
    register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                         flatten_with_keys_fn=flatten_with_keys)


class _Spec:
    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta, children):
        self.kind, self.meta, self.children = kind, meta, children

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return isinstance(other, _Spec) and self.kind == other.kind and \
            self.meta == other.meta and self.children == other.children

    def __repr__(self):
        return f"Spec({self.kind}, {self.meta}, {self.children})"


def tree_flatten(tree):
    node = _REGISTRY.get(type(tree))
    if node is not None:
        children, context = node[0](tree)
        parts = [tree_flatten(x) for x in children]
        return [l for p in parts for l in p[0]], _Spec("custom", (type(tree), context),
                                                       [p[1] for p in parts])
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        parts = [tree_flatten(x) for x in tree]
        return [l for p in parts for l in p[0]], _Spec("namedtuple", type(tree), [p[1] for p in parts])
    if isinstance(tree, (tuple, list)):
        parts = [tree_flatten(x) for x in tree]
        return [l for p in parts for l in p[0]], _Spec(type(tree).__name__, len(tree),
                                                       [p[1] for p in parts])
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [tree_flatten(tree[k]) for k in keys]
        return [l for p in parts for l in p[0]], _Spec("dict", tuple(keys), [p[1] for p in parts])
    return [tree], _Spec("leaf", None, [])


def tree_unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s.kind == "leaf":
            return next(it)
        items = [build(c) for c in s.children]
        if s.kind == "custom":
            return _REGISTRY[s.meta[0]][1](items, s.meta[1])
        if s.kind == "namedtuple":
            return s.meta(*items)
        if s.kind == "tuple":
            return tuple(items)
        if s.kind == "list":
            return items
        return dict(zip(s.meta, items))
    return build(spec)


def tree_map(fn, tree, *rests):
    """``fn`` over the leaves of ``tree`` (and the matching leaves of each tree in ``rests``,
    which must have ``tree``'s structure), rebuilt in ``tree``'s structure."""
    leaves, spec = tree_flatten(tree)
    columns = [leaves]
    for r in rests:
        rl, rs = tree_flatten(r)
        if rs != spec:
            raise ValueError(f"Expected tree structure {spec} but got {rs}")
        columns.append(rl)
    return tree_unflatten([fn(*xs) for xs in zip(*columns)], spec)


def tree_leaves(tree):
    """The leaves of ``tree``, in flattening order."""
    return tree_flatten(tree)[0]


def tree_structure(tree):
    """The spec of ``tree``: equal for trees that differ only in their leaves."""
    return tree_flatten(tree)[1]
