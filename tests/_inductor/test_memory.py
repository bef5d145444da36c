"""Memory planning: dead buffers are reused, intermediates stay allocated between calls,
and nothing a call returns is overwritten by the next one."""
import numpy as np

from .helpers import check, rand


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


def test_eager_result_aliasing_a_pooled_buffer_is_copied():
    from ember._inductor.codegen.wrapper import _unpooled
    buf = np.arange(6.0)
    out = _unpooled(buf[1:4], {"b_t": buf}, ("b_t",))  # an eager op returned a view of it
    assert not np.shares_memory(out, buf)
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    fresh = np.ones(3)
    assert _unpooled(fresh, {"b_t": buf}, ("b_t",)) is fresh
