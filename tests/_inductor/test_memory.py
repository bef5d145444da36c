"""Memory planning: dead buffers are reused, intermediates stay allocated between calls,
and nothing a call returns is overwritten by the next one."""
import numpy as np

import ember

from .helpers import assert_close, check, rand


def _fn(x):
    t1 = (x * 2).exp()            # a kernel's temporary, read by sort
    s1 = t1.sort(-1)[0]
    t2 = (s1 + 1).sqrt()          # same size: takes t1's memory (t1 is dead)
    s2 = t2.sort(0)[0]
    return s2 * 3, t2.sum(-1)


def test_dead_buffer_is_reused():
    x = rand(16, 32)
    c = check(_fn, x)
    reused = [b for b in c.schedule.buffers.values() if b.reuses]
    assert reused, c.source


def test_results_survive_later_calls():
    x, y = rand(16, 32), rand(16, 32, seed=5)
    c = check(_fn, x)
    first = [np.array(t._data) for t in c(x)]
    kept = c(x)
    c(y)  # the pooled intermediates are overwritten here
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, np.asarray(b._data))


def test_output_aliasing_a_pooled_buffer_is_copied():
    from ember._inductor.codegen.wrapper import make_pool
    pooled = make_pool()
    buf = pooled((6,), np.float64, "b_t")
    out = pooled.fresh(buf[1:4])  # an eager op returned a view of a pooled buffer
    assert not np.shares_memory(out, buf)
    fresh = np.ones(3)
    assert pooled.fresh(fresh) is fresh


def test_view_of_a_temporary_as_output_survives_later_calls():
    x, y = rand(6, 8), rand(6, 8, seed=2)
    fn = lambda x: ((x * 2).sort(-1)[0], (x + 1).exp().t().sort(0)[1])  # noqa: E731
    c = check(fn, x)
    first = [np.array(t._data) for t in c(x)]
    kept = c(x)
    c(y)
    for a, b in zip(first, kept):
        np.testing.assert_array_equal(a, np.asarray(b._data))



def test_buffer_seen_by_a_live_view_is_not_reused():
    """Memory planning frees a buffer only once nothing can see it: an eager view of it
    read later (or returned) keeps it alive.  The 2-layer GPT's saved permute of its
    dropped-out attention was overwritten by a later kernel (issue 11)."""
    def fn(x, w):
        t1 = (x + 1).exp()         # a kernel's temporary
        v = t1.t()                 # an eager NumPy view of it (its readers are matmuls)
        m = t1 @ w                 # t1's last direct reader
        t2 = (m * 3).sin()         # same size: may not take t1's memory while v is read
        return (v @ t2).sort(-1)[0]
    x, w = rand(8, 8, dtype=ember.float64), rand(8, 8, seed=4, dtype=ember.float64)
    c = check(fn, x, w)
    kept = c(x, w)[0]
    assert_close((kept,), (fn(x, w),))
