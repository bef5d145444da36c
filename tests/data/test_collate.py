"""default_collate / default_convert / collate against torch 2.13 on every type torch
handles: tensors, NumPy arrays and scalars, Python numbers, strings and bytes, mappings
(plain, ordered, default, immutable), named tuples, tuples, lists and their subclasses,
ranges, nesting, and the errors."""
import collections
import collections.abc
import types

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from torch.utils.data._utils import collate as tcollate

import ember
import ember.utils.data as edata
from ember.utils.data import _collate as ecollate

Point = collections.namedtuple("Point", "a b")


class Tagged(list):
    """A list subclass with extra state: collate copies it rather than calling list()."""

    def __init__(self, items=(), tag=None):
        super().__init__(items)
        self.tag = tag


def _same(e, t):
    """ember's collated structure equals torch's: same containers, same tensors."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), (type(e), t)
        assert str(t.dtype) == str(e.dtype).replace("ember.", "torch."), (e.dtype, t.dtype)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_array_equal(e.numpy(), t.numpy())
        return
    assert type(e) is type(t), (type(e), type(t))
    if isinstance(t, collections.abc.Mapping):
        assert list(e) == list(t)
        for k in t:
            _same(e[k], t[k])
        if isinstance(t, collections.defaultdict):
            assert e.default_factory is t.default_factory
    elif isinstance(t, (list, tuple)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            _same(a, b)
        if isinstance(t, Tagged):
            assert e.tag == t.tag
    else:
        assert e == t


def _both(batch_for):
    """``batch_for(lib)`` built for torch and for ember (tensors differ, the rest is shared)."""
    return batch_for(ember), batch_for(torch)


CASES = {
    "tensors": lambda lib: [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
    "int_tensors_2d": lambda lib: [lib.arange(6).reshape(2, 3), lib.arange(6, 12).reshape(2, 3)],
    "ndarray_f32": lambda lib: [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "ndarray_i64_bool": lambda lib: [(np.arange(3), np.array([True, False])),
                                     (np.arange(3, 6), np.array([False, False]))],
    "numpy_scalars": lambda lib: [{"f": np.float32(1.5), "i": np.int16(3), "b": np.bool_(True),
                                   "d": np.float64(2.0)},
                                  {"f": np.float32(2.5), "i": np.int16(4), "b": np.bool_(False),
                                   "d": np.float64(3.0)}],
    "python_numbers": lambda lib: [(1.5, 2, True), (2.5, 3, False)],
    "strings_bytes": lambda lib: [("a", b"x", np.str_("s")), ("b", b"y", np.str_("t"))],
    "dict_ordered_default": lambda lib: [
        {"d": {"x": 1}, "o": collections.OrderedDict(b=1.0, a=2.0),
         "dd": collections.defaultdict(list, {"k": 1})},
        {"d": {"x": 2}, "o": collections.OrderedDict(b=3.0, a=4.0),
         "dd": collections.defaultdict(list, {"k": 2})}],
    "immutable_mapping": lambda lib: [types.MappingProxyType({"a": 1}),
                                      types.MappingProxyType({"a": 2})],
    "namedtuple": lambda lib: [Point(1, lib.tensor([1.0])), Point(2, lib.tensor([2.0]))],
    "tuple_becomes_list": lambda lib: [(1, 2.0), (3, 4.0)],
    "list_subclass_copied": lambda lib: [Tagged([1, 2], tag="t"), Tagged([3, 4], tag="u")],
    "range_becomes_list": lambda lib: [range(3), range(1, 4)],
    "nested": lambda lib: [[{"p": Point(np.array([1.0]), "n1"), "v": [1, 2]}],
                           [{"p": Point(np.array([2.0]), "n2"), "v": [3, 4]}]],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_default_collate_matches_torch(case):
    e_batch, t_batch = _both(CASES[case])
    _same(edata.default_collate(e_batch), tdata.default_collate(t_batch))


@pytest.mark.parametrize("batch, exc, match", [
    ([[1, 2], [3]], RuntimeError, "each element in list of batch should be of equal size"),
    ([np.array(["a"]), np.array(["b"])], TypeError,
     "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
     "found <U1"),
    ([np.array([object()]), np.array([object()])], TypeError, "found object"),
    ([object(), object()], TypeError, "found <class 'object'>"),
    ([1 + 2j, 3j], TypeError, "found <class 'complex'>"),
])
def test_default_collate_errors_match_torch(batch, exc, match):
    for collate in (tdata.default_collate, edata.default_collate):
        with pytest.raises(exc, match=match):
            collate(batch)


def test_mismatched_tensor_sizes_raise_torchs_error():
    msg = "stack expects each tensor to be equal size, but got \\[2\\] at entry 0 and \\[3\\]"
    with pytest.raises(RuntimeError, match=msg):
        tdata.default_collate([torch.ones(2), torch.ones(3)])
    with pytest.raises(RuntimeError, match=msg):
        edata.default_collate([ember.ones(2), ember.ones(3)])


@pytest.mark.parametrize("data", [
    np.arange(4.0), np.float32(2.5), np.int64(3), (np.arange(2), 3, "s"),
    Point(np.arange(2), [np.ones(1)]), {"a": np.arange(3), "b": "x"}, [np.zeros(2)],
    np.array(["str", "arr"]), "plain", 7, Tagged([np.ones(1)], tag="k"), range(3)])
def test_default_convert_matches_torch(data):
    e, t = edata.default_convert(data), tdata.default_convert(data)
    if isinstance(t, np.ndarray):  # string arrays pass through unchanged
        assert e is data and t is data
        return
    _same(e, t)


def test_collate_with_an_extended_fn_map_like_torch():
    class Box:
        def __init__(self, v):
            self.v = v

    def box_fn(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)
    batch = [{"box": Box(1), "n": 1}, {"box": Box(2), "n": 2}]
    t = tcollate.collate(batch, collate_fn_map={**tcollate.default_collate_fn_map, Box: box_fn})
    e = ecollate.collate(batch, collate_fn_map={**ecollate.default_collate_fn_map, Box: box_fn})
    assert e["box"] == t["box"] == 3
    _same(e["n"], t["n"])
    with pytest.raises(TypeError, match="found <class"):
        ecollate.collate(batch, collate_fn_map=None)  # without the map nothing is known


def test_dataloader_collates_namedtuples_and_numpy_from_workers():
    data = [Point(np.full(2, i, np.float32), i) for i in range(6)]
    for lib, tensor_t in ((tdata, torch.Tensor), (edata, ember.Tensor)):
        batches = list(lib.DataLoader(data, batch_size=3, num_workers=2))
        assert [type(b) for b in batches] == [Point, Point]
        assert isinstance(batches[1].a, tensor_t)
        np.testing.assert_array_equal(np.asarray(batches[1].a), np.full((3, 2), [[3], [4], [5]]))
        assert np.asarray(batches[1].b).tolist() == [3, 4, 5]
