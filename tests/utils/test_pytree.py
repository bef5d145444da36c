"""ember.utils._pytree against torch.utils._pytree (torch 2.13 is the oracle)."""
import collections
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch.utils._pytree as tp

import ember
import ember.utils._pytree as ep
from ember.func import _pytree as fp

Point = namedtuple("Point", "x y")


def _trees():
    return [
        1, None, "s", [], (), {}, [1, 2, 3], (1, (2, None)), {"b": 1, "a": [2, 3]},
        {"b": [1, (2, None)], "a": OrderedDict(z=3, y=4), "c": defaultdict(list, {"k": 5}),
         "d": deque([6, 7], maxlen=3), "e": Point(8, [9, 10])},
        [Point(1, 2), {"x": (3,)}, deque([4])], OrderedDict([(2, "v"), (1, [None])]),
        {1: [], 2: {}, 3: ()},
    ]


@pytest.mark.parametrize("tree", _trees(), ids=range(len(_trees())))
def test_flatten_spec_paths_match_torch(tree):
    leaves, spec = ep.tree_flatten(tree)
    tleaves, tspec = tp.tree_flatten(tree)
    assert leaves == tleaves
    assert repr(spec) == repr(tspec)
    assert (spec.num_leaves, spec.num_nodes, spec.num_children) == \
        (tspec.num_leaves, tspec.num_nodes, tspec.num_children)
    assert spec.context == tspec.context
    assert spec.is_leaf() == tspec.is_leaf()
    assert ep.tree_leaves(tree) == tp.tree_leaves(tree) == list(ep.tree_iter(tree))
    rebuilt = ep.tree_unflatten(leaves, spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    assert ep.tree_unflatten(list(range(len(leaves))), spec) == \
        tp.tree_unflatten(list(range(len(leaves))), tspec)
    paths = [(ep.keystr(k), v) for k, v in ep.tree_leaves_with_path(tree)]
    assert paths == [(tp.keystr(k), v) for k, v in tp.tree_leaves_with_path(tree)]
    assert [repr(k) for k, _ in ep.tree_flatten_with_path(tree)[0]] == \
        [repr(k) for k, _ in tp.tree_flatten_with_path(tree)[0]]
    for kp, v in ep.tree_leaves_with_path(tree):
        assert ep.key_get(tree, kp) is v
    assert ep.treespec_pprint(spec) == tp.treespec_pprint(tspec)


def test_spec_equality_and_hash_follow_torch():
    pairs = [({"a": 1, "b": 2}, {"b": 1, "a": 2}), ([1, 2], [3, 4]), ([1, 2], (1, 2)),
             (Point(1, 2), Point(3, 4)), ([1, None], [1, 2]), (deque([1], maxlen=2), deque([1])),
             ({"a": 1}, OrderedDict(a=1))]
    for a, b in pairs:
        e = ep.tree_structure(a) == ep.tree_structure(b)
        assert e == (tp.tree_structure(a) == tp.tree_structure(b)), (a, b)
        if e:
            assert hash(ep.tree_structure(a)) == hash(ep.tree_structure(b))
    assert ep.tree_structure(1) == ep.LeafSpec() and isinstance(ep.tree_structure(1), ep.LeafSpec)
    assert repr(ep.LeafSpec()) == "*"


def test_map_family_matches_torch():
    tree = {"b": [1, 2.5, (3, "s")], "a": Point(4, None)}
    f = lambda x: x * 2 if isinstance(x, (int, float)) else x  # noqa: E731
    assert ep.tree_map(f, tree) == tp.tree_map(f, tree)
    other = {"a": Point(1, 1), "b": [1, 1, (1, 1)]}   # keys in another order: matched by key
    g = lambda x, y: (x, y)  # noqa: E731
    assert ep.tree_map(g, tree, other) == tp.tree_map(g, tree, other)
    assert ep.tree_map_only(int, lambda x: x * 10, tree) == tp.tree_map_only(int, lambda x: x * 10, tree)
    assert ep.tree_map_only((int, str), lambda x: x * 2, tree) == \
        tp.tree_map_only((int, str), lambda x: x * 2, tree)
    assert ep.tree_map_only(lambda x: x == 3, lambda x: -x, tree) == \
        tp.tree_map_only(lambda x: x == 3, lambda x: -x, tree)
    assert ep.tree_map_only(int | float, lambda x: 0, tree) == tp.tree_map_only(int | float, lambda x: 0, tree)
    seen = []
    assert ep.tree_map_(seen.append, tree) is tree
    assert seen == tp.tree_leaves(tree)
    seen.clear()
    assert ep.tree_map_only_(str, seen.append, tree) is tree and seen == ["s"]
    is_pair = lambda x: isinstance(x, tuple) and len(x) == 2  # noqa: E731
    assert ep.tree_map(str, tree, is_leaf=is_pair) == tp.tree_map(str, tree, is_leaf=is_pair)
    assert ep.tree_leaves(tree, is_leaf=is_pair) == tp.tree_leaves(tree, is_leaf=is_pair)
    for pred in (lambda x: x is not None, lambda x: isinstance(x, int)):
        assert ep.tree_all(pred, tree) == tp.tree_all(pred, tree)
        assert ep.tree_any(pred, tree) == tp.tree_any(pred, tree)
    assert ep.tree_all_only(int, lambda x: x > 0, tree) == tp.tree_all_only(int, lambda x: x > 0, tree)
    assert ep.tree_any_only(float, lambda x: x > 3, tree) == \
        tp.tree_any_only(float, lambda x: x > 3, tree)
    h = lambda kp, x, y: (ep.keystr(kp), x, y)  # noqa: E731
    th = lambda kp, x, y: (tp.keystr(kp), x, y)  # noqa: E731
    assert ep.tree_map_with_path(h, tree, other) == tp.tree_map_with_path(th, tree, other)


@pytest.mark.parametrize("a,b", [
    ([1, 2], [1, 2, 3]), ([1, 2], (1, 2)), ({"a": 1}, {"b": 1}), ({"a": 1, "c": 2}, {"b": 1, "c": 2}),
    ([1, [2]], [1, 2]), (Point(1, 2), (1, 2)), (Point(1, 2), namedtuple("Q", "x y")(1, 2)),
    (OrderedDict(a=1), deque([1])),
])
def test_mismatched_structures_raise_torch_errors(a, b):
    with pytest.raises(Exception) as te:
        tp.tree_map(lambda x, y: x, a, b)
    with pytest.raises(type(te.value)) as ee:
        ep.tree_map(lambda x, y: x, a, b)
    if "Q" not in str(te.value):   # class reprs differ by module
        assert str(ee.value) == str(te.value)


def test_unflatten_errors_match_torch():
    for leaves, tree in (([1, 2], [1]), ([], (1,))):
        with pytest.raises(ValueError) as te:
            tp.tree_unflatten(leaves, tp.tree_structure(tree))
        with pytest.raises(ValueError) as ee:
            ep.tree_unflatten(leaves, ep.tree_structure(tree))
        assert str(ee.value) == str(te.value)
    with pytest.raises(TypeError):
        ep.tree_unflatten([1], "not a spec")


class _Pair:
    def __init__(self, a, b, tag):
        self.a, self.b, self.tag = a, b, tag

    def __eq__(self, other):
        return type(other) is type(self) and (self.a, self.b, self.tag) == (other.a, other.b, other.tag)


def _register(mod, cls, name):
    mod.register_pytree_node(
        cls, lambda p: ([p.a, p.b], p.tag), lambda c, tag: cls(c[0], c[1], tag),
        serialized_type_name=name,
        flatten_with_keys_fn=lambda p: ([(mod.GetAttrKey("a"), p.a), (mod.GetAttrKey("b"), p.b)], p.tag))


class TorchPair(_Pair):
    pass


class EmberPair(_Pair):
    pass


_register(tp, TorchPair, "test_pytree.Pair")
_register(ep, EmberPair, "test_pytree.Pair")


def test_registered_class_matches_torch():
    tree = [EmberPair(1, {"k": 2}, "t"), 3]
    ttree = [TorchPair(1, {"k": 2}, "t"), 3]
    leaves, spec = ep.tree_flatten(tree)
    tleaves, tspec = tp.tree_flatten(ttree)
    assert leaves == tleaves == [1, 2, 3]
    assert repr(spec).replace("EmberPair", "X") == repr(tspec).replace("TorchPair", "X")
    assert ep.tree_unflatten([4, 5, 6], spec) == [EmberPair(4, {"k": 5}, "t"), 6]
    assert [ep.keystr(k) for k, _ in ep.tree_leaves_with_path(tree)] == \
        [tp.keystr(k) for k, _ in tp.tree_leaves_with_path(ttree)]
    assert EmberPair in ep.SUPPORTED_NODES and ep.SUPPORTED_NODES[EmberPair].type is EmberPair
    assert ep.treespec_dumps(spec) == tp.treespec_dumps(tspec)
    assert ep.treespec_loads(tp.treespec_dumps(tspec)) == spec
    # another tag is another structure; torch's error names the custom type
    with pytest.raises(ValueError, match="Node context mismatch for custom node type"):
        ep.tree_map(lambda x, y: x, tree, [EmberPair(1, {"k": 2}, "u"), 3])
    with pytest.raises(ValueError, match="already registered"):
        _register(ep, EmberPair, "again")
    with pytest.raises(ValueError, match="already registered"):
        ep.register_pytree_node(list, lambda x: (x, None), lambda c, _: c)


def test_registry_is_shared_with_func_and_export():
    class A:
        def __init__(self, x):
            self.x = x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ep._register_pytree_node(A, lambda a: ([a.x], None), lambda c, _: A(c[0]))
    leaves, spec = fp.tree_flatten([A(ember.ones(2))])
    assert len(leaves) == 1 and isinstance(fp.tree_unflatten(leaves, spec)[0], A)

    class B:
        def __init__(self, y):
            self.y = y
    fp.register_pytree_node(B, lambda b: ([b.y, b.y], None), lambda c, _: B(c[0]))
    assert ep.tree_leaves({"b": B(7)}) == [7, 7]

    import dataclasses

    @dataclasses.dataclass
    class D:
        u: int
        v: object = None
    ember.export.register_dataclass(D)
    assert ep.tree_leaves([D(1, 2), D(3)]) == [1, 2, 3]
    # torch's key paths of a registered dataclass: its non-None fields, by attribute
    assert [ep.keystr(k) for k, _ in ep.tree_leaves_with_path([D(1, 2), D(3)])] == \
        ["[0].u", "[0].v", "[1].u"]
    out = ep.tree_map(lambda x: x + 1, [D(1, 2)])
    assert out == [D(2, 3)]


def test_serialization_matches_torch():
    for tree in ([1, (2, {"a": 3})], OrderedDict(b=1, a=[2]), deque([1, 2], maxlen=4), (),
                 {"d": defaultdict(list, {"k": [1], 2: 3})}):
        s = tp.treespec_dumps(tp.tree_structure(tree))
        assert ep.treespec_dumps(ep.tree_structure(tree)) == s
        assert ep.treespec_loads(s) == ep.tree_structure(tree)
    with pytest.raises(NotImplementedError):
        ep.treespec_dumps(ep.tree_structure(Point(1, 2)))


def test_helpers_match_torch():
    for x in (Point(1, 2), Point, (1, 2), collections.OrderedDict()):
        assert ep.is_namedtuple(x) == tp.is_namedtuple(x)
        assert ep.is_namedtuple_instance(x) == tp.is_namedtuple_instance(x)
    for x in (1, None, [1], (1,), {"a": None}):
        assert ep.tree_is_leaf(x) == tp.tree_is_leaf(x)
        with pytest.warns(FutureWarning):
            assert ep._is_leaf(x, lambda v: v == [1]) == tp.tree_is_leaf(x, lambda v: v == [1])
    args, kwargs = ([1, (2, None)], {"a": 3}), {"k": {"z": [4]}, "j": 5}
    assert ep.arg_tree_leaves(*args, **kwargs) == tp.arg_tree_leaves(*args, **kwargs)
    assert str(ep.MappingKey("k")) == str(tp.MappingKey("k"))
    assert repr(ep.SequenceKey(0)) == repr(tp.SequenceKey(0))
    assert set(tp.__all__) - set(ep.__all__) <= {"is_structseq", "is_structseq_class",
                                                 "is_structseq_instance"}


def test_size_and_return_types_are_nodes_as_in_torch():
    import torch
    leaves, spec = ep.tree_flatten({"s": ember.Size([2, 3])})
    tleaves, tspec = tp.tree_flatten({"s": torch.Size([2, 3])})
    assert leaves == tleaves and repr(spec) == repr(tspec)
    out = ep.tree_unflatten([4, 5], spec)["s"]
    assert type(out) is ember.Size and out == (4, 5)
    x = [[1.0, 5.0], [3.0, 2.0]]
    got = ep.tree_leaves(ember.max(ember.tensor(x), 0))
    want = tp.tree_leaves(torch.max(torch.tensor(x), 0))
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


def test_import_paths_used_by_libraries():
    import ember.utils
    from ember.utils import _pytree
    assert _pytree is ep and ember.utils._pytree is ep
    assert ep.register_pytree_node is fp.register_pytree_node
