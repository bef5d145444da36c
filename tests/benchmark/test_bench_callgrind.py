"""Timer.collect_callgrind: instruction counts stable across runs, larger for more work."""
import os
import shutil

import pytest
from torch.utils.benchmark.utils.valgrind_wrapper import timer_interface as ti

from ember.utils.benchmark import CopyIfCallgrind, FunctionCount, FunctionCounts, Timer

# CI machines have valgrind and cc, so there these tests always run (and fail if either is
# missing); elsewhere they are skipped without them
needs_valgrind = pytest.mark.skipif(
    (shutil.which("valgrind") is None or shutil.which("cc") is None) and not os.environ.get("CI"),
    reason="valgrind (and a C compiler for its control helper) not installed")

STMT = "total = sum(i * i for i in range(n))"


@needs_valgrind
def test_counts_stable_across_runs_and_grow_with_work():
    small = Timer(STMT, setup="n = 200")
    first = small.collect_callgrind(number=20, repeats=2, retain_out_file=True)
    second = small.collect_callgrind(number=20, collect_baseline=False)
    big = Timer(STMT, globals={"n": CopyIfCallgrind(2000)}).collect_callgrind(number=20)
    a, b = first[0].counts(), second.counts()
    assert a > 0 and abs(a - b) <= 0.01 * a
    assert abs(first[1].counts() - a) <= 0.01 * a
    assert big.counts() > 5 * a  # ten times the loop body

    # the statement's counts exclude the interpreter start-up: the baseline
    # (number passes of `pass`) is a small constant
    base = first[0].baseline_exclusive_stats.sum()
    assert 0 < base < a / 10
    assert second.baseline_exclusive_stats.sum() == 0  # no baseline collected

    stats = first[0].stats()
    assert not stats.inclusive and stats.sum() == a
    assert list(stats) == sorted(stats, reverse=True)
    assert first[0].stats(inclusive=True)[0].count >= stats[0].count
    delta = big.delta(first[0])
    assert delta.sum() == big.counts() - a
    std = first[0].as_standardized()
    assert std.counts() == a and std.stmt_callgrind_out is None
    assert any(fn.startswith("Python/") or fn.startswith("Objects/") for _, fn in std.stats())
    assert "events: Ir" in first[0].stmt_callgrind_out
    text = repr(first[0])
    assert STMT in text and f"Instructions: {a:>12}" in text and "20 runs per measurement" in text


@needs_valgrind
def test_callgrind_globals_and_errors():
    with pytest.raises(ValueError, match="CopyIfCallgrind"):
        Timer("x + 1", globals={"x": 1}).collect_callgrind(number=2)
    with pytest.raises(ValueError, match="Unsupported type"):
        CopyIfCallgrind(object())
    with pytest.raises(ZeroDivisionError):  # checked in-process before valgrind starts
        Timer("1 / 0").collect_callgrind(number=2)
    with pytest.raises(ValueError, match="repeats"):
        Timer("pass").collect_callgrind(repeats=0)


def test_missing_valgrind_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "")
    with pytest.raises(RuntimeError, match="needs valgrind.*valgrind.*not found on PATH"):
        Timer("pass").collect_callgrind(number=1)


def test_function_counts_match_torch():
    data = [(120, "a.c:f"), (5, "b.c:g"), (-3, "c.c:h"), (77, "x" * 120)] + \
        [(i, f"gen.c:fn{i}") for i in range(1, 20)]
    for inclusive in (False, True):
        ours = FunctionCounts._from_dict({fn: c for c, fn in data}, inclusive)
        theirs = ti.FunctionCounts._from_dict({fn: c for c, fn in data}, inclusive)
        assert list(ours) == [tuple(x) for x in theirs]
        assert repr(ours).split("\n", 1)[1] == repr(theirs).split("\n", 1)[1]
        assert repr(ours[:3]).split("\n", 1)[1] == repr(theirs[:3]).split("\n", 1)[1]
    ours = FunctionCounts._from_dict({fn: c for c, fn in data}, False)
    assert (ours - ours).sum() == 0 and (ours + ours).sum() == 2 * ours.sum()
    assert (ours * 0.5)[0] == FunctionCount(60, "a.c:f")
    assert ours.transform(lambda fn: fn.split(":")[0]).filter(lambda f: f == "gen.c").sum() == 190
    noisy = FunctionCounts((FunctionCount(9, "dictobject.c:lookdict_unicode"),
                            FunctionCount(4, "x.c:y")), False)
    assert noisy.denoise().sum() == 4
    with pytest.raises(AssertionError, match="inclusive"):
        ours + FunctionCounts((), True)
