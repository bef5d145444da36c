"""torch.utils.data's DataPipe names under ember: functional registration, chaining,
DataChunk, determinism switches and validation decorators, side by side with torch."""
import pickle
import typing

import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
_COUNTER = [0]


def _define(lib):
    d = lib.utils.data
    _COUNTER[0] += 1
    tag = f"{lib.__name__}{_COUNTER[0]}"

    class Source(d.IterDataPipe):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    @d.functional_datapipe(f"times_{tag}")
    class Times(d.IterDataPipe):
        """Multiply every item."""

        def __init__(self, source_dp, k):
            self.source_dp, self.k = source_dp, k

        def __iter__(self):
            for x in self.source_dp:
                yield x * self.k

    @d.functional_datapipe(f"pairs_{tag}")
    class Pairs(d.IterDataPipe):
        def __init__(self, source_dp):
            self.source_dp = source_dp

        def __iter__(self):
            buf = []
            for x in self.source_dp:
                buf.append(x)
                if len(buf) == 2:
                    yield d.DataChunk(buf)
                    buf = []

    class Squares(d.MapDataPipe):
        def __getitem__(self, i):
            return i * i

        def __len__(self):
            return 4

    @d.functional_datapipe(f"shifted_{tag}")
    class Shifted(d.MapDataPipe):
        def __init__(self, dp, s):
            self.dp, self.s = dp, s

        def __getitem__(self, i):
            return self.dp[i] + self.s

        def __len__(self):
            return len(self.dp)
    return tag, Source, Times, Pairs, Squares


@LIBS
def test_functional_chaining(lib):
    tag, Source, Times, Pairs, Squares = _define(lib)
    dp = getattr(getattr(Source(5), f"times_{tag}")(3), f"pairs_{tag}")()
    chunks = list(dp)
    assert [list(c) for c in chunks] == [[0, 3], [6, 9]]
    assert chunks[0].as_str() == "[0, 3]" and list(chunks[0].raw_iterator()) == [0, 3]
    assert getattr(Source(1), f"times_{tag}").__doc__ == "Multiply every item."
    assert f"times_{tag}" in dir(Source(1))
    m = getattr(Squares(), f"shifted_{tag}")(10)
    assert [m[i] for i in range(len(m))] == [10, 11, 14, 19]
    with pytest.raises(AttributeError, match="has no attribute 'nope"):
        Source(1).nope
    with pytest.raises(Exception, match="already taken"):
        lib.utils.data.functional_datapipe(f"times_{tag}")(Times)
    assert lib.utils.data.functional_datapipe(f"x_{tag}")(int) is int  # not registered
    if lib is ember:  # torch's DataLoader pickles the pipe graph: these classes are local
        loader = lib.utils.data.DataLoader(getattr(Source(4), f"times_{tag}")(2), batch_size=2)
        assert [b.tolist() for b in loader] == [[0, 2], [4, 6]]
    assert pickle.loads(pickle.dumps(lib.utils.data.DataChunk([1, 2]))) == [1, 2]


@LIBS
def test_non_deterministic_and_guarantee(lib):
    d = lib.utils.data

    @d.non_deterministic
    class Shuffled(d.IterDataPipe):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    class Maybe(d.IterDataPipe):
        def __init__(self, random):
            self.random = random

        def __iter__(self):
            return iter([1])
    Maybe = d.non_deterministic(lambda random: random)(Maybe)
    assert list(Shuffled(2)) == [0, 1] and list(Maybe(True)) == [1]
    with d.guaranteed_datapipes_determinism():
        with pytest.raises(TypeError, match="is non-deterministic"):
            Shuffled(2)
        with pytest.raises(TypeError, match="is non-deterministic"):
            Maybe(True)
        assert list(Maybe(False)) == [1]
    assert list(Shuffled(1)) == [0]
    with pytest.raises(TypeError, match="Only `IterDataPipe` can be decorated"):
        d.non_deterministic(int)


def test_validation():
    # torch 2.13's runtime_validation reads a `type` its datapipes no longer carry (it raises
    # AttributeError); ember checks the item type of IterDataPipe[T] as documented
    d = ember.utils.data

    class Ints(d.IterDataPipe[int]):
        def __init__(self, items):
            self.items = items

        @d.runtime_validation
        def __iter__(self) -> typing.Iterator[int]:
            yield from self.items

    class Wrap(d.IterDataPipe):
        @d.argument_validation
        def __init__(self, dp: d.IterDataPipe):
            self.dp = dp

        def __iter__(self):
            return iter(self.dp)
    assert list(Ints([1, 2])) == [1, 2]
    with pytest.raises(RuntimeError, match="Expected an instance as subtype"):
        list(Ints([1, "a"]))
    with d.runtime_validation_disabled():
        assert list(Ints([1, "a"])) == [1, "a"]
    assert list(Wrap(Ints([3]))) == [3]
    with pytest.raises(TypeError, match="Expected argument 'dp'"):
        Wrap([1, 2])
    with pytest.raises(TypeError, match="Can not decorate function"):
        d.runtime_validation(lambda self: None)


@LIBS
def test_thread_safe_generator(lib):
    assert lib.thread_safe_generator() is None  # main process
    assert lib.random.thread_safe_generator is not None

    class Draws(lib.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return lib.thread_safe_generator() is None  # process workers: None too

    loader = lib.utils.data.DataLoader(Draws(), batch_size=None, num_workers=1)
    assert [bool(b) for b in loader] == [True, True]
