"""RandomSampler with replacement draws lazily (minGPT/makemore ask for num_samples=1e10),
and get_worker_info inside workers, both against torch."""
import dataclasses
import itertools
import tracemalloc

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

LIBS = {"torch": (torch, tdata), "ember": (ember, edata)}
HUGE = int(1e10)


@pytest.mark.parametrize("name", sorted(LIBS))
def test_replacement_sampler_with_huge_num_samples_draws_lazily(name):
    lib, data = LIBS[name]
    s = data.RandomSampler(range(50), replacement=True, num_samples=HUGE)
    assert len(s) == HUGE
    tracemalloc.start()
    try:
        first = list(itertools.islice(iter(s), 1000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(first) == 1000 and all(isinstance(i, int) and 0 <= i < 50 for i in first)
    assert len(set(first)) == 50  # 1000 draws from 50 values reach every one
    assert peak < 4 << 20, peak  # an eager draw would need 80 GB


@pytest.mark.parametrize("name", sorted(LIBS))
def test_replacement_stream_does_not_depend_on_num_samples(name):
    # drawn in chunks of 32: the first k indices are the same whatever num_samples is
    lib, data = LIBS[name]

    def draw(n, k):
        g = lib.Generator().manual_seed(1234)
        return list(itertools.islice(data.RandomSampler(range(1000), True, n, generator=g), k))
    assert draw(HUGE, 96) == draw(96, 96) == draw(100, 96)
    assert len(draw(70, 1000)) == 70


def test_dataloader_over_a_huge_replacement_sampler_like_makemore():
    ds = edata.TensorDataset(ember.arange(20.0).reshape(10, 2), ember.arange(10))
    s = edata.RandomSampler(ds, replacement=True, num_samples=HUGE)
    dl = edata.DataLoader(ds, sampler=s, batch_size=4)
    assert len(dl) == HUGE // 4
    it = iter(dl)
    for _ in range(5):
        x, y = next(it)
        assert x.shape == (4, 2) and y.shape == (4,)
        np.testing.assert_array_equal(x.numpy(), np.stack([2 * y.numpy(), 2 * y.numpy() + 1], 1))


class Reports:
    """Each sample says which worker made it (works for both libraries)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return i


def _infos(data):
    def collate(batch):
        info = data.get_worker_info()
        return (batch, info.id, info.num_workers, info.seed, type(info.dataset).__name__,
                info.worker_method, info.rng, data.get_worker_info() is info)
    return list(data.DataLoader(Reports(), batch_size=2, num_workers=2, collate_fn=collate))


def test_get_worker_info_in_workers_matches_torch():
    got = {}
    for name, (lib, data) in LIBS.items():
        assert data.get_worker_info() is None
        rows = _infos(data)
        assert [r[0] for r in rows] == [[0, 1], [2, 3], [4, 5], [6, 7]]
        assert [r[1] for r in rows] == [0, 1, 0, 1]  # round robin
        base = {r[3] - r[1] for r in rows}
        assert len(base) == 1  # worker k's seed is base_seed + k
        got[name] = [r[1:3] + r[4:] for r in rows]
        assert data.get_worker_info() is None
    assert got["ember"] == got["torch"]
    assert got["ember"][0] == (0, 2, "Reports", "multiprocessing", None, True)


def test_worker_info_is_frozen_like_torch():
    for worker_info in (tdata._utils.worker.WorkerInfo, edata._worker.WorkerInfo):
        info = worker_info(id=0, num_workers=1, seed=3, dataset=None)
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.id = 1
        assert [f.name for f in dataclasses.fields(info)] == \
            ["id", "num_workers", "seed", "dataset", "rng", "worker_method"]


def test_worker_seed_seeds_each_workers_generator():
    def collate(batch):
        info = edata.get_worker_info()
        return info.seed, ember.initial_seed(), float(ember.rand(1))
    rows = list(edata.DataLoader(Reports(), batch_size=4, num_workers=2, collate_fn=collate))
    for seed, initial, _ in rows:
        assert seed == initial
    assert rows[0][2] != rows[1][2]  # different workers, different streams
