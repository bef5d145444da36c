"""ember.futures.Future (torch.futures semantics) and GradBucket, in one process."""
import threading

import numpy as np
import pytest

import ember as torch
from ember.futures import Future, collect_all, wait_all
from ember.nn.parallel._reducer import GradBucket, compute_bucket_assignment


def test_future_result_then_chain():
    f = Future()
    assert not f.done()
    g = f.then(lambda fut: fut.value() * 2).then(lambda fut: fut.value() + 1)
    f.set_result(20)
    assert f.done() and f.wait() == 20 and f.value() == 20
    assert g.wait() == 41


def test_future_is_generic_as_torchs():
    # captum annotates `-> Union[Tensor, Future[Tensor]]` at import time
    import typing
    import torch as real
    for F in (Future, real.futures.Future):
        alias = F[torch.Tensor]
        assert typing.get_origin(alias) is F and typing.get_args(alias) == (torch.Tensor,)
        assert typing.Union[int, F[int]] == typing.Union[int, F[int]]
    f = Future[int]()
    f.set_result(5)
    assert isinstance(f, Future) and f.wait() == 5


def test_future_at_top_level():
    # captum: `isinstance(out, torch.Future)` on what its forward returned
    import torch as real
    for lib in (torch, real):
        assert issubclass(lib.futures.Future, lib.Future)
        assert isinstance(lib.futures.Future(), lib.Future)
        assert not isinstance(lib.ones(1), lib.Future)


def test_future_then_on_completed_runs_inline():
    f = Future()
    f.set_result(3)
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    assert seen == [3]
    assert f.then(lambda fut: fut.value() - 1).value() == 2


def test_future_exceptions_propagate():
    f = Future()
    g = f.then(lambda fut: fut.value() + 1)
    f.set_exception(ValueError("bad value"))
    with pytest.raises(ValueError, match="bad value"):
        f.wait()
    with pytest.raises(ValueError, match="bad value"):
        g.value()
    h = Future()
    k = h.then(lambda fut: 1 / 0)
    h.set_result(1)
    with pytest.raises(ZeroDivisionError):
        k.wait()
    with pytest.raises(TypeError):
        Future().set_exception("not an exception")


def test_future_completes_once_and_value_before_done():
    f = Future()
    with pytest.raises(RuntimeError, match="not completed"):
        f.value()
    f.set_result(1)
    with pytest.raises(RuntimeError, match="only be marked completed once"):
        f.set_result(2)


def test_future_wait_across_threads():
    f = Future()
    t = threading.Timer(0.05, lambda: f.set_result(torch.ones(2)))
    t.start()
    assert torch.equal(f.wait(), torch.ones(2))
    t.join()


def test_collect_all_and_wait_all():
    fs = [Future() for _ in range(3)]
    all_ = collect_all(fs)
    for i, f in enumerate(fs):
        assert not all_.done()
        f.set_result(i * i)
    assert [f.value() for f in all_.wait()] == [0, 1, 4]
    assert wait_all(fs) == [0, 1, 4]
    assert collect_all([]).wait() == []


def test_grad_bucket_views_and_set_buffer():
    p1 = torch.nn.Parameter(torch.zeros(2, 3))
    p2 = torch.nn.Parameter(torch.zeros(4))
    buf = torch.arange(10, dtype=torch.float32)
    b = GradBucket(1, buf, [0, 6], [(2, 3), (4,)], [p1, p2], True)
    assert b.index() == 1 and b.is_last() and b.parameters() == [p1, p2]
    g1, g2 = b.gradients()
    assert g1.shape == (2, 3) and torch.equal(g2, torch.tensor([6.0, 7, 8, 9]))
    g1[0, 0] = 100.0  # views into the flat buffer
    assert buf[0].item() == 100.0
    half = buf.to(torch.float16)
    b.set_buffer(half)
    assert b.buffer() is half
    with pytest.raises(ValueError, match="10 elements"):
        b.set_buffer(torch.zeros(3))


def test_bucket_assignment_reverse_order_and_caps():
    params = [torch.zeros(256) for _ in range(6)]  # 1 KiB each
    # first bucket capped at 1 KiB, the others at 2 KiB; the last parameters come first
    assert compute_bucket_assignment(params, 2048, 1024) == [[5], [4, 3], [2, 1], [0]]
    mixed = [torch.zeros(256), torch.zeros(256, dtype=torch.float64), torch.zeros(256)]
    buckets = compute_bucket_assignment(mixed, 1 << 20, 1 << 20)
    assert sorted(map(sorted, buckets)) == [[0, 2], [1]]  # one dtype per bucket
    assert np.all([len(b) for b in buckets])
