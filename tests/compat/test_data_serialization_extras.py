"""DataLoader.multiprocessing_context / check_worker_number_rationality, _DatasetKind, and
torch.serialization's skip_data / normalize_storage_type / storage_to_tensor_type, against
torch."""
import multiprocessing
import os
import warnings

import numpy as np
import pytest

import ember

import torch


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value).__name__, str(e.value)


def test_multiprocessing_context_validation():
    for lib in (torch, ember):
        DL = lib.utils.data.DataLoader
        assert DL(range(4)).multiprocessing_context is None
        dl = DL(range(4), num_workers=2, multiprocessing_context="spawn")
        assert isinstance(dl.multiprocessing_context, multiprocessing.context.BaseContext)
        assert dl.multiprocessing_context.get_start_method() == "spawn"
        ctx = multiprocessing.get_context("fork")
        assert DL(range(4), num_workers=1, multiprocessing_context=ctx).multiprocessing_context \
            is ctx
    for kw in ({"multiprocessing_context": "spawn"},
               {"num_workers": 1, "multiprocessing_context": "nope"},
               {"num_workers": 1, "multiprocessing_context": 3}):
        assert _error(lambda: ember.utils.data.DataLoader(range(4), **kw)) == \
            _error(lambda: torch.utils.data.DataLoader(range(4), **kw))


def test_check_worker_number_rationality():
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    msgs = {}
    for lib in (torch, ember):
        DL = lib.utils.data.DataLoader
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            DL(range(4)).check_worker_number_rationality()
            DL(range(4), num_workers=n).check_worker_number_rationality()
        with pytest.warns(UserWarning) as rec:
            DL(range(4), num_workers=n + 1).check_worker_number_rationality()
        msgs[lib] = str(rec[0].message)
    assert msgs[ember] == msgs[torch]
    assert f"create {n + 1} worker processes" in msgs[ember]


def test_dataset_kind_and_fetchers():
    K, TK = ember.utils.data._DatasetKind, torch.utils.data._DatasetKind
    assert (K.Map, K.Iterable) == (TK.Map, TK.Iterable) == (0, 1)
    assert ember.utils.data.DataLoader(range(3))._dataset_kind == K.Map

    class It(ember.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(5))
    assert ember.utils.data.DataLoader(It())._dataset_kind == K.Iterable
    f = K.create_fetcher(K.Map, [10, 11, 12], True, list, False)
    assert f.fetch([2, 0]) == [12, 10]
    f = K.create_fetcher(K.Iterable, It(), True, list, True)
    assert f.fetch([None, None]) == [0, 1] and f.fetch([None, None]) == [2, 3]
    with pytest.raises(StopIteration):
        f.fetch([None, None])  # one item left, drop_last
    f = K.create_fetcher(K.Iterable, It(), False, lambda x: x * 2, False)
    assert f.fetch(None) == 0 and f.fetch(None) == 2


def test_skip_data(tmp_path):
    for lib in (torch, ember):
        p = str(tmp_path / f"{lib.__name__}.pt")
        t = lib.arange(6.0).reshape(2, 3)
        with lib.serialization.skip_data():
            lib.save({"a": t, "b": lib.ones(2, dtype=lib.int64)}, p)
        out = lib.load(p, weights_only=True)
        assert out["a"].shape == (2, 3) and out["b"].dtype == lib.int64
        assert not out["a"].numpy().any()
        lib.save({"a": t}, p)
        with lib.serialization.skip_data(materialize_fake_tensors=False):
            skipped = lib.load(p, weights_only=True)
        # torch leaves the unread storage uninitialised; ember's is zero-filled
        assert tuple(skipped["a"].shape) == (2, 3)
        if lib is ember:
            assert not skipped["a"].numpy().any()
        np.testing.assert_array_equal(lib.load(p, weights_only=True)["a"].numpy(),
                                      np.arange(6.0).reshape(2, 3))


def test_storage_type_helpers(torch_typed_storage_warning_state):
    warnings.simplefilter("ignore", UserWarning)  # TypedStorage's deprecation
    assert ember.serialization.normalize_storage_type(ember.FloatStorage) is ember.FloatStorage
    assert torch.serialization.normalize_storage_type(torch.FloatStorage) is torch.FloatStorage
    for make in (lambda lib: lib.FloatStorage(2), lambda lib: lib.UntypedStorage(2)):
        t, e = (_error(lambda: lib.serialization.storage_to_tensor_type(make(lib)))
                for lib in (torch, ember))
        assert t[0] == e[0] == "AttributeError" and t[1].split("'")[-2] == e[1].split("'")[-2]
    import types
    mod = types.ModuleType("fake_storage_mod")

    class MyStorage:
        pass

    class MyTensor:
        pass
    MyStorage.__module__ = "fake_storage_mod"
    mod.MyStorage, mod.MyTensor = MyStorage, MyTensor
    import sys
    sys.modules["fake_storage_mod"] = mod
    try:
        assert ember.serialization.storage_to_tensor_type(MyStorage()) is MyTensor
        assert torch.serialization.storage_to_tensor_type(MyStorage()) is MyTensor
    finally:
        del sys.modules["fake_storage_mod"]
