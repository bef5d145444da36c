"""blas_threads.matmul's back-off for large products: the first product of a dtype pair runs
on one BLAS thread and sets the single-threaded rate, two threaded products in a row much
slower than that rate (threads descheduled by other processes) send large products to one thread
for a hold that doubles while retries collapse, and a threaded product that keeps its
speed resets it.  Driven by a fake clock and a fake pool; values are NumPy's matmul."""
import numpy as np
import pytest

from ember._core import blas_threads as bt


class _Pool:
    def __init__(self, n):
        self.n, self.calls = n, []

    def get(self):
        return self.n

    def set(self, n):
        self.calls.append(n)
        self.n = n


@pytest.fixture
def fake(monkeypatch):
    bt._load()
    pool = _Pool(2)
    clock = {"now": 100.0, "cost": 0.0}  # cost: the seconds the next product takes

    def tick():
        clock["now"] += clock.pop("pending", 0.0)
        clock["pending"] = clock["cost"]  # start reads now, the end reads now + cost
        return clock["now"]

    monkeypatch.setattr(bt, "_get", pool.get)
    monkeypatch.setattr(bt, "_set", pool.set)
    monkeypatch.setattr(bt, "_clock", tick)
    monkeypatch.setattr(bt, "_rate", {})
    monkeypatch.setattr(bt, "_hold_until", 0.0)
    monkeypatch.setattr(bt, "_hold", bt.HOLD_MIN)
    monkeypatch.setattr(bt, "_strikes", 0)
    return pool, clock


def _product(clock, seconds, pool, shape=(512, 256, 128), dtype=np.float32):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    assert m * k * n >= bt.SMALL_MACS
    clock["cost"] = seconds
    pool.calls.clear()
    r = bt.matmul(np, a, b)
    np.testing.assert_array_equal(r, np.matmul(a, b))
    clock["now"] += clock.pop("pending", 0.0)
    return "single" if pool.calls == [1, 2] else ("threaded" if not pool.calls else pool.calls)


def test_collapse_holds_one_thread_then_retries(fake):
    pool, clock = fake
    assert _product(clock, 0.010, pool) == "single"    # calibrates: 10 ms on one thread
    assert _product(clock, 0.006, pool) == "threaded"  # 0.6x: threads helped
    assert _product(clock, 0.025, pool) == "threaded"  # 2.5x once: a wake-up, no collapse
    assert _product(clock, 0.006, pool) == "threaded"  # (the strike is forgotten)
    assert _product(clock, 0.080, pool) == "threaded"  # 8x
    assert _product(clock, 0.080, pool) == "threaded"  # 8x again: collapsed
    assert _product(clock, 0.010, pool) == "single"    # within the hold
    clock["now"] += bt.HOLD_MIN
    assert _product(clock, 0.090, pool) == "threaded"  # retry after the hold: collapses again
    assert _product(clock, 0.090, pool) == "threaded"
    clock["now"] += bt.HOLD_MIN
    assert _product(clock, 0.010, pool) == "single"    # the hold doubled
    clock["now"] += bt.HOLD_MIN
    assert _product(clock, 0.005, pool) == "threaded"  # threads fine again: hold reset
    assert bt._hold == bt.HOLD_MIN
    assert pool.n == 2  # the pool's size is always restored


def test_rates_are_per_dtype_and_the_best_single_rate_is_kept(fake):
    pool, clock = fake
    assert _product(clock, 0.020, pool) == "single"
    assert _product(clock, 0.020, pool, dtype=np.float64) == "single"  # its own calibration
    assert _product(clock, 0.070, pool) == "threaded"  # 3.5x: under COLLAPSE, no strike
    assert _product(clock, 0.070, pool) == "threaded"
    assert bt._hold_until == 0.0
    assert _product(clock, 0.090, pool) == "threaded"  # 4.5x twice: a collapse
    assert _product(clock, 0.090, pool) == "threaded"
    assert _product(clock, 0.008, pool) == "single"    # faster single run lowers the rate
    assert min(bt._rate.values()) < 0.020 / (512 * 256 * 128)


def test_small_products_and_one_thread_pools_are_untouched(fake):
    pool, clock = fake
    a, b = np.ones((64, 64), np.float32), np.ones((64, 64), np.float32)
    np.testing.assert_array_equal(bt.matmul(np, a, b), a @ b)
    assert pool.calls == [1, 2] and bt._rate == {}  # small: one thread, no timing
    pool.n = 1
    assert _product(clock, 0.5, pool) == "threaded"  # no pool change at one thread
    assert bt._rate == {}
