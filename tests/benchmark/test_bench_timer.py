"""Timer: statistics from known (fake-clock) times, block sizing, errors, threads."""
import traceback

import numpy as np
import pytest
import threadpoolctl

import ember
from ember.utils.benchmark import Measurement, TaskSpec, Timer

TICK = 2.0 ** -20  # a binary fraction: sums of ticks are exact, so block counts are too


class FakeClock:
    """A timer that only moves when the statement calls ``advance``."""

    def __init__(self, steps=None):
        self.now = 0.0
        self.calls = 0
        self._steps = steps  # optional cycle of per-call advances

    def __call__(self):
        return self.now

    def advance(self, dt=TICK):
        if self._steps is not None:
            dt = self._steps[self.calls % len(self._steps)]
        self.calls += 1
        self.now += dt


def fake_timer(clock=None, **kw):
    clock = clock or FakeClock()
    return clock, Timer("clock.advance()", timer=clock, globals={"clock": clock}, **kw)


def test_timeit_times_the_loop_after_a_warmup():
    clock, t = fake_timer()
    m = t.timeit(number=1000)
    assert clock.calls == 10 + 1000  # warm-up of number // 100 runs, then the timed loop
    assert m.number_per_run == 1000 and m.raw_times == [1000 * TICK]
    assert m.times == [TICK] and m.median == TICK and m.mean == TICK and m.iqr == 0.0
    clock, t = fake_timer()
    t.timeit(number=50)
    assert clock.calls == 2 + 50  # the warm-up is at least 2 runs


def test_blocked_autorange_block_size_and_replicates():
    clock, t = fake_timer()
    seen = []
    m = t.blocked_autorange(callback=lambda n, dt: seen.append((n, dt)), min_run_time=0.2)
    # block size grows 1, 10, 100, 1000 until a block takes >= min_run_time / 1000
    # (1000 * 2**-20 s = 0.95 ms) and the 1 ns timer floor is <= 0.01% of it
    assert m.number_per_run == 1000
    # then whole blocks until 0.2 s is spent: ceil(0.2 / (1000 * 2**-20)) = 210
    assert len(m.raw_times) == 210 and set(m.raw_times) == {1000 * TICK}
    assert seen == [(1000, 1000 * TICK)] * 210
    assert m.median == TICK and m.iqr == 0 and not m.has_warnings


def test_adaptive_autorange_stops_on_low_iqr_and_at_max_run_time():
    clock, t = fake_timer()
    m = t.adaptive_autorange(threshold=0.1, min_run_time=0.01)
    assert m.number_per_run == 100  # block must reach 0.05 / 1000 s
    assert len(m.raw_times) == 105  # ceil(0.01 / (100 * 2**-20)), iqr is 0 by then
    # after block sizing (16 clock reads), every other block ends 0.1 ms late:
    # iqr/median never gets under 10%
    clock = FakeClock()
    reads = []

    def jittery():
        reads.append(None)
        return clock.now + (1e-4 if len(reads) > 16 and len(reads) % 4 == 2 else 0.0)

    t = Timer("clock.advance()", timer=jittery, globals={"clock": clock})
    m = t.adaptive_autorange(threshold=0.1, min_run_time=0.01, max_run_time=0.05)
    total = sum(m.raw_times)
    assert total > 0.05 and total - m.raw_times[-1] <= 0.05  # stopped right after the cap
    assert m.number_per_run == 100 and len(m.raw_times) > 100
    assert not m.meets_confidence(0.1) and m.has_warnings


def test_measurement_statistics_from_raw_times():
    raw = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 6.0, 7.0]
    m = Measurement(number_per_run=10, raw_times=raw, task_spec=TaskSpec("f()", "pass"))
    times = np.array(raw) / 10
    assert m.times == pytest.approx(list(times))
    assert m.median == pytest.approx(np.median(times))
    assert m.mean == pytest.approx(times.mean())
    assert m.iqr == pytest.approx(np.quantile(times, .75) - np.quantile(times, .25))
    # iqr/median = 0.35 / 0.45: noisy, and grossly so
    assert m.has_warnings and not m.meets_confidence(0.25) and m.meets_confidence(1.0)
    quiet = Measurement(1, [1.0, 1.01, 0.99, 1.0, 1.02], TaskSpec("f()", "pass"))
    assert not quiet.has_warnings and quiet.meets_confidence()
    assert m.label is None and m.num_threads == 1 and m.stmt == "f()"  # TaskSpec read-through


def test_statement_errors_name_the_statement():
    t = Timer("x = 1\ny = x / zero", setup="zero = 0")
    with pytest.raises(ZeroDivisionError) as info:
        t.blocked_autorange(min_run_time=0.01)
    text = "".join(traceback.format_exception(info.value))
    assert "while running Timer stmt:\n  x = 1\n  y = x / zero" in text
    assert "with setup:\n  zero = 0" in text
    assert "    y = x / zero\n" in text  # the traceback shows the failing source line
    with pytest.raises(NameError, match="undefined_name"):
        Timer("undefined_name + 1").timeit(5)
    with pytest.raises(SyntaxError):
        Timer("x = = 1")
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        Timer("pass", global_setup="int x;")


def test_globals_are_copied_and_torch_names_ember():
    g = {"a": ember.ones(3)}
    t = Timer("out.append(torch is ember and a.sum().item())", globals={**g, "out": []})
    t.timeit(1)
    assert set(g) == {"a"}
    out = t._runner._inner.__globals__["out"]
    assert out and all(v == 3.0 for v in out)


def test_autorange_grows_number_like_timeit():
    # each run advances 0.03 s: 1, 2, 5 runs are under 0.2 s, 10 runs take 0.3 s
    clock, t = fake_timer(FakeClock(steps=[0.03]))
    seen = []
    m = t.autorange(callback=lambda n, dt: seen.append(n))
    assert seen == [1, 2, 5, 10]
    assert m.number_per_run == 10 and m.raw_times == [pytest.approx(0.3)]
    assert m.median == pytest.approx(0.03)


def test_repeat_returns_one_raw_time_per_block():
    clock, t = fake_timer()
    m = t.repeat(repeat=3, number=100)
    assert clock.calls == 2 + 3 * 100  # warm-up, then three blocks
    assert m.number_per_run == 100 and m.raw_times == [100 * TICK] * 3
    clock, t = fake_timer(FakeClock(steps=[0.05]))
    m = t.repeat()  # 5 blocks, number chosen by autorange (5 runs reach 0.25 s)
    assert m.number_per_run == 5 and len(m.raw_times) == 5
    with pytest.raises(ValueError, match="repeat must be positive"):
        t.repeat(repeat=0, number=1)


def _blas_threads():
    return {i["filepath"]: i["num_threads"] for i in threadpoolctl.threadpool_info()}


@pytest.mark.parametrize("inner", [1, 2])
def test_num_threads_applied_during_measurement_and_restored(inner):
    outer = 3 - inner
    seen = []
    with threadpoolctl.threadpool_limits(limits=outer):
        before = _blas_threads()
        assert before and set(before.values()) == {outer}
        t = Timer("seen.append(info())", globals={"seen": seen, "info": _blas_threads},
                  num_threads=inner)
        t.timeit(3)
        t.blocked_autorange(min_run_time=0.001)
        assert seen and all(set(s.values()) == {inner} for s in seen)
        assert _blas_threads() == before
        with pytest.raises(RuntimeError):
            Timer("raise RuntimeError('boom')", num_threads=inner).timeit(1)
        assert _blas_threads() == before  # restored when the statement raises too
