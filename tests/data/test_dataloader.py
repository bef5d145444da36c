"""ember.utils.data against torch.utils.data: samplers, collation, real worker processes."""
import collections
import os
import signal

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata


class Squares(edata.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return {"x": ember.tensor([float(i), float(i * i)]), "y": i, "name": f"s{i}"}


class Failing(edata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError(f"bad sample {i}")
        return ember.tensor([i])


class Dying(edata.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


class Counting(edata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = edata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


def test_default_collate_matches_torch():
    Point = collections.namedtuple("Point", "a b")
    batch = [{"t": np.array([1.0, 2.0]), "f": 1.5, "i": 3, "s": "x", "p": Point(1, 2.0),
              "l": [1, 2]},
             {"t": np.array([3.0, 4.0]), "f": 2.5, "i": 4, "s": "y", "p": Point(3, 4.0),
              "l": [3, 4]}]
    e = edata.default_collate(batch)
    t = tdata.default_collate(batch)
    assert e["t"].dtype.name == str(t["t"].dtype).split(".")[1] == "float64"
    assert e["f"].dtype is ember.float64 and t["f"].dtype == torch.float64
    assert e["i"].tolist() == t["i"].tolist() and e["i"].dtype is ember.int64
    assert e["s"] == t["s"] == ["x", "y"]
    assert isinstance(e["p"], Point) and e["p"].a.tolist() == t["p"].a.tolist()
    assert [x.tolist() for x in e["l"]] == [x.tolist() for x in t["l"]]
    with pytest.raises(RuntimeError, match="equal size"):
        edata.default_collate([[1, 2], [3]])


@pytest.mark.parametrize("num_workers", [0, 2])
def test_batches_in_order_with_workers(num_workers):
    dl = edata.DataLoader(Squares(10), batch_size=3, num_workers=num_workers)
    batches = list(dl)
    assert len(dl) == len(batches) == 4
    assert [b["y"].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert batches[1]["x"].tolist() == [[3.0, 9.0], [4.0, 16.0], [5.0, 25.0]]
    assert batches[3]["name"] == ["s9"]


def test_shuffle_is_a_permutation_and_reproducible_with_generator():
    def run(seed):
        g = ember.Generator().manual_seed(seed) if hasattr(ember.Generator(), "manual_seed") \
            else None
        return [int(b) for batch in edata.DataLoader(list(range(20)), batch_size=4, shuffle=True,
                                                     generator=g) for b in batch]
    a, b, c = run(1), run(1), run(2)
    assert sorted(a) == list(range(20)) and a == b and a != c


def test_samplers_and_drop_last():
    ds = list(range(10))
    dl = edata.DataLoader(ds, batch_size=4, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(dl) == 2
    bs = edata.BatchSampler(edata.SequentialSampler(ds), 3, False)
    assert list(bs) == list(tdata.BatchSampler(tdata.SequentialSampler(ds), 3, False))
    dl = edata.DataLoader(ds, batch_sampler=bs)
    assert [b.tolist() for b in dl][-1] == [9]
    w = edata.WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], 5)
    assert list(w) == [2] * 5
    sub = edata.SubsetRandomSampler([7, 8, 9])
    assert sorted(sub) == [7, 8, 9]
    rs = edata.RandomSampler(ds, replacement=True, num_samples=30)
    assert len(list(rs)) == 30 and set(rs) <= set(ds)
    ranks = [list(edata.DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False))
             for r in range(3)]
    t_ranks = [list(tdata.DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False))
               for r in range(3)]
    assert ranks == t_ranks


def test_constructor_errors_match_torch():
    for kwargs in ({"batch_sampler": [[0]], "batch_size": 2}, {"sampler": [0], "shuffle": True},
                   {"num_workers": -1}, {"timeout": -1}, {"prefetch_factor": 2},
                   {"persistent_workers": True}):
        with pytest.raises(ValueError):
            tdata.DataLoader(list(range(4)), **kwargs)
        with pytest.raises(ValueError):
            edata.DataLoader(list(range(4)), **kwargs)


def test_worker_exception_carries_traceback():
    dl = edata.DataLoader(Failing(), batch_size=2, num_workers=2)
    with pytest.raises(ValueError) as info:
        list(dl)
    msg = str(info.value)
    assert "DataLoader worker process" in msg and "bad sample 5" in msg and "Traceback" in msg


def test_dead_worker_raises_instead_of_hanging():
    dl = edata.DataLoader(Dying(), batch_size=1, num_workers=2, timeout=30)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(dl)


def test_iterable_dataset_with_worker_sharding_and_info():
    dl = edata.DataLoader(Counting(10), batch_size=2, num_workers=2)
    got = sorted(int(x) for b in dl for x in b)
    assert got == list(range(10))
    assert edata.get_worker_info() is None
    assert [b.tolist() for b in edata.DataLoader(Counting(5), batch_size=2)] == \
        [[0, 1], [2, 3], [4]]


def test_worker_init_fn_and_persistent_workers():
    seen = []

    def init(wid):
        info = edata.get_worker_info()
        assert info.id == wid and info.num_workers == 2
    dl = edata.DataLoader(Squares(6), batch_size=2, num_workers=2, worker_init_fn=init,
                          persistent_workers=True)
    for _ in range(2):
        seen.append([b["y"].tolist() for b in dl])
    assert seen[0] == seen[1] == [[0, 1], [2, 3], [4, 5]]
    dl._iterator._shutdown()


def test_datasets_and_random_split():
    x = ember.arange(10.0)
    y = ember.arange(10) * 2
    ds = edata.TensorDataset(x, y)
    assert [v.item() for v in ds[3]] == [3.0, 6]
    cat = edata.ConcatDataset([ds, ds])
    assert len(cat) == 20 and cat[13][1].item() == 6 and cat[-1][1].item() == 18
    parts = edata.random_split(range(10), [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [5, 3, 2]
    assert sorted(i for p in parts for i in p) == list(range(10))
    with pytest.raises(ValueError):
        edata.random_split(range(10), [3, 3])
    sub = edata.Subset(ds, [1, 3])
    assert len(sub) == 2 and sub[1][0].item() == 3.0
    chain = edata.ChainDataset([Counting(2), Counting(3)])
    assert list(chain) == [0, 1, 0, 1, 2]


def test_data_classes_are_generic_as_torch():
    # kornia annotates `train_dataloader: DataLoader[Any]`; user datasets subclass
    # Dataset[Tensor] and stay usable
    import typing
    import torch.utils.data as td

    import ember.utils.data as ed
    names = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
             "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
             "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
             "TensorDataset", "WeightedRandomSampler"]

    def generic(mod):
        out = {}
        for n in names:
            try:
                getattr(mod, n)[typing.Any]
                out[n] = True
            except TypeError:
                out[n] = False
        return out
    assert generic(ed) == generic(td)

    class Squares(ed.Dataset[int]):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return i * i
    batches = [b.tolist() for b in ed.DataLoader(Squares(), batch_size=2)]
    assert batches == [[0, 1], [4, 9], [16]]
    assert isinstance(Squares(), ed.Dataset) and isinstance(ed.DataLoader(Squares()), ed.DataLoader)


_PIN_SCRIPT = r"""
import warnings
warnings.simplefilter("default")
import {lib} as lib
a = lib.utils.data.DataLoader(list(range(4)), pin_memory=True)
b = lib.utils.data.DataLoader(list(range(4)), pin_memory=True)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("default")
    for _ in range(2):
        for x in a:
            pass
    for x in b:
        pass
print(sum("no accelerator is found" in str(m.message) for m in w))
"""


def test_pin_memory_without_accelerator_warns_once_like_torch():
    # the imagenet example iterates a train and a val loader: torch's warning comes from
    # one place inside the loader, so the default filter shows it once
    import subprocess
    import sys
    counts = []
    for lib in ("torch", "ember"):
        out = subprocess.run([sys.executable, "-c", _PIN_SCRIPT.format(lib=lib)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        counts.append(out.stdout.strip())
    assert counts[1] == counts[0] == "1"
