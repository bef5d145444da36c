"""Minimal pytrees: flatten/unflatten nested tuples, lists, dicts and namedtuples."""

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]


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
        if s.kind == "namedtuple":
            return s.meta(*items)
        if s.kind == "tuple":
            return tuple(items)
        if s.kind == "list":
            return items
        return dict(zip(s.meta, items))
    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
