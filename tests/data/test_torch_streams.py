"""Samplers, random_split and DataLoader iterators draw from torch's random streams: after
the same manual_seed, ember yields torch's exact indices and leaves the global generator in
torch's state (issue 16)."""
import itertools

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

SEEDS = [0, 3, 12345]


def both(fn, seed):
    """fn(lib, data) under each library after manual_seed(seed), then one draw from each
    global stream to check that both advanced alike."""
    out = []
    for lib, data in ((torch, tdata), (ember, edata)):
        lib.manual_seed(seed)
        res = fn(lib, data)
        out.append((res, lib.randint(0, 2 ** 62, (4,)).tolist()))
    return out


def assert_same(fn, seed):
    (t_res, t_after), (e_res, e_after) = both(fn, seed)
    assert e_res == t_res
    assert e_after == t_after


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("num_samples", [None, 7, 23, 50])
def test_random_sampler_without_replacement(seed, num_samples):
    # 50 > n: two whole permutations then the head of a third, which torch draws whole
    assert_same(lambda lib, data: list(data.RandomSampler(range(20), num_samples=num_samples)),
                seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("num_samples", [5, 32, 75])
def test_random_sampler_with_replacement(seed, num_samples):
    assert_same(lambda lib, data: list(data.RandomSampler(range(13), replacement=True,
                                                          num_samples=num_samples)), seed)


def test_random_sampler_huge_replacement_prefix_matches_torch():
    assert_same(lambda lib, data: list(itertools.islice(
        data.RandomSampler(range(50), replacement=True, num_samples=int(1e10)), 100)), 5)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sampler_with_its_own_generator(seed):
    def run(lib, data):
        g = lib.Generator()
        g.manual_seed(seed + 1)
        s = data.RandomSampler(range(17), generator=g)
        return list(s) + list(s)  # the second epoch continues the same generator
    assert_same(run, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sampler_epochs_reseed_from_the_global_stream(seed):
    def run(lib, data):
        s = data.RandomSampler(range(11))
        return [list(s) for _ in range(3)]
    (t_res, _), (e_res, _) = both(run, seed)
    assert e_res == t_res
    assert e_res[0] != e_res[1]


@pytest.mark.parametrize("seed", SEEDS)
def test_subset_random_sampler(seed):
    indices = [3, 9, 27, 81, 5, 25, 125, 7]
    assert_same(lambda lib, data: list(data.SubsetRandomSampler(indices)), seed)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("replacement,num_samples", [(True, 40), (False, 6)])
def test_weighted_random_sampler(seed, replacement, num_samples):
    weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6, 0.05]
    assert_same(lambda lib, data: list(data.WeightedRandomSampler(weights, num_samples,
                                                                  replacement)), seed)


def test_weighted_random_sampler_bad_input_like_torch():
    for data in (tdata, edata):
        with pytest.raises(ValueError, match="replacement should be a boolean"):
            data.WeightedRandomSampler([1.0, 2.0], 2, replacement=1)
        with pytest.raises(ValueError, match="1d sequence"):
            data.WeightedRandomSampler([[1.0, 2.0]], 2)
        with pytest.raises(RuntimeError, match="n_sample > prob_dist"):
            list(data.WeightedRandomSampler([1.0, 0.0, 2.0], 4, replacement=False))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("lengths", [[10, 20, 7], [0.5, 0.3, 0.2]])
def test_random_split(seed, lengths):
    assert_same(lambda lib, data: [list(s.indices) for s in data.random_split(range(37),
                                                                              lengths)], seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_split_with_generator(seed):
    def run(lib, data):
        g = lib.Generator().manual_seed(seed + 7)
        return [list(s.indices) for s in data.random_split(range(15), [4, 11], generator=g)]
    assert_same(run, seed)


def _batches(lib, data, **kw):
    ds = data.TensorDataset(lib.arange(23))
    return [b[0].tolist() for b in data.DataLoader(ds, batch_size=5, **kw)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_dataloader_batches(seed, drop_last):
    def run(lib, data):
        return [_batches(lib, data, shuffle=True, drop_last=drop_last) for _ in range(3)]
    assert_same(run, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_shuffled_dataloader_with_generator(seed):
    def run(lib, data):
        g = lib.Generator().manual_seed(seed + 2)
        return [_batches(lib, data, shuffle=True, generator=g) for _ in range(2)]
    assert_same(run, seed)


@pytest.mark.parametrize("seed", SEEDS)
def test_unshuffled_iterator_creation_advances_global_stream(seed):
    # the base seed is drawn even with no shuffling and no workers
    def run(lib, data):
        loader = data.DataLoader(data.TensorDataset(lib.arange(6)), batch_size=4)
        it = iter(loader)
        state = lib.get_rng_state().numpy().tobytes() if lib is torch else \
            np.asarray(lib.get_rng_state().numpy()).tobytes()
        return [state, next(it)[0].tolist()]
    (t_res, _), (e_res, _) = both(run, seed)
    assert e_res == t_res
    torch.manual_seed(seed)
    assert torch.get_rng_state().numpy().tobytes() != t_res[0]  # a draw did happen


@pytest.mark.parametrize("seed", SEEDS)
def test_iterator_state_after_creation_matches_torch(seed):
    def run(lib, data):
        loader = data.DataLoader(data.TensorDataset(lib.arange(9)), batch_size=2, shuffle=True)
        states = []
        it = iter(loader)
        states.append(np.asarray(lib.get_rng_state().numpy()).tobytes())
        next(it)  # the sampler draws its own seed on the first index
        states.append(np.asarray(lib.get_rng_state().numpy()).tobytes())
        return states
    assert_same(run, seed)


def test_base_seed_drawn_from_loader_generator_leaves_global_stream_alone():
    def run(lib, data):
        g = lib.Generator().manual_seed(1)
        loader = data.DataLoader(data.TensorDataset(lib.arange(4)), generator=g)
        iter(loader)
        return [np.asarray(lib.get_rng_state().numpy()).tobytes(),
                np.asarray(g.get_state().numpy()).tobytes()]
    (t_res, _), (e_res, _) = both(run, 0)
    assert e_res == t_res
    torch.manual_seed(0)
    assert torch.get_rng_state().numpy().tobytes() == t_res[0]


def test_worker_seeds_derive_from_torch_base_seed():
    def seeds(lib, data):
        class DS(data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                return data.get_worker_info().seed
        loader = data.DataLoader(DS(), batch_size=None, num_workers=2)
        return sorted(set(int(s) for s in loader))
    assert_same(seeds, 11)


def test_worker_streams_match_torch():
    # inside a worker, torch's, Python's and NumPy's global streams are seeded as torch
    # seeds them, so a dataset drawing from any of them yields torch's values
    def draws(lib, data):
        class DS(data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                import random
                return (data.get_worker_info().id, lib.randint(0, 1000, (2,)).tolist(),
                        random.random(), np.random.randint(0, 10 ** 9))
        loader = data.DataLoader(DS(), batch_size=None, num_workers=2)
        return [(w, t, p, int(n)) for w, t, p, n in loader]
    assert_same(draws, 4)


@pytest.mark.parametrize("epoch", [0, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shards_match_torch(epoch, drop_last):
    def shards(lib, data):
        out = []
        for rank in range(3):
            s = data.DistributedSampler(range(20), num_replicas=3, rank=rank, seed=9,
                                        drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out
    assert_same(shards, 1)
