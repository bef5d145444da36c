"""Autograd from several threads: per-thread grad/inference mode and mode stack, process-wide
anomaly and forward-AD state (as torch), concurrent backward on shared leaves, and version
counters of tensors written from several threads."""
import sys
import threading

import numpy as np
import pytest
import torch

import ember
from ember import DispatchMode
from ember._core.state import SHARED, STATE
from ember._core.tensor import _version_of


@pytest.fixture(autouse=True)
def _fast_switching():
    # switch threads often so that unsynchronised read-modify-writes would interleave
    prev = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(prev)


def _in_thread(fn):
    """Run ``fn`` in a fresh thread; return its result (re-raising its exception)."""
    box = {}

    def run():
        try:
            box["r"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["e"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "e" in box:
        raise box["e"]
    return box["r"]


def _run_threads(n, fn):
    """Start ``n`` threads running ``fn(i)`` together (a barrier lines them up)."""
    bar = threading.Barrier(n)
    errors = []

    def run(i):
        try:
            bar.wait()
            fn(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def _modes_seen(lib):
    return (lib.is_grad_enabled(), lib.is_inference_mode_enabled(), lib.is_anomaly_enabled())


# ---- thread-local state ---------------------------------------------------------------

def test_no_grad_and_inference_mode_stay_in_their_thread_like_torch():
    for lib in (torch, ember):
        with lib.no_grad():
            assert _in_thread(lambda: _modes_seen(lib))[:2] == (True, False), lib
            assert not lib.is_grad_enabled()
        with lib.inference_mode():
            assert _in_thread(lambda: _modes_seen(lib))[:2] == (True, False), lib
            assert lib.is_inference_mode_enabled()
        assert _modes_seen(lib)[:2] == (True, False)


def test_grad_records_in_a_thread_while_another_is_under_no_grad():
    x = ember.ones(3, requires_grad=True)
    inside = threading.Event()
    done = threading.Event()

    def holder():
        with ember.no_grad():
            inside.set()
            done.wait(10)
    t = threading.Thread(target=holder)
    t.start()
    inside.wait(10)
    try:
        y = (x * 3).sum()  # the other thread's no_grad must not reach this thread
        assert y.grad_fn is not None
        y.backward()
    finally:
        done.set()
        t.join()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0, 3.0])


def test_set_grad_enabled_called_in_a_thread_is_local_to_it():
    def body(lib):
        lib.set_grad_enabled(False)
        x = lib.ones(2, requires_grad=True)
        return lib.is_grad_enabled(), (x * 2).requires_grad
    for lib in (torch, ember):
        assert _in_thread(lambda: body(lib)) == (False, False)
        assert lib.is_grad_enabled()
    # a thread started while the parent has grad off still starts with it on (torch)
    for lib in (torch, ember):
        lib.set_grad_enabled(False)
        try:
            assert _in_thread(lambda: lib.is_grad_enabled()) is True
        finally:
            lib.set_grad_enabled(True)


def test_backward_in_one_thread_leaves_other_threads_grad_mode_alone():
    # the engine turns grad mode off while it runs; other threads keep recording
    w = ember.ones(64, requires_grad=True)
    n_steps = 30

    def work(i):
        for _ in range(n_steps):
            y = (w * float(i + 1)).sum()
            assert y.grad_fn is not None
            y.backward()
    _run_threads(4, work)
    np.testing.assert_array_equal(w.grad.numpy(), np.full(64, n_steps * (1 + 2 + 3 + 4.0)))


class _Counting(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append(op.name)
        return op(*args, **kwargs)


def test_mode_pushed_in_one_thread_is_not_seen_by_another():
    a = ember.ones(3)
    with _Counting() as m:
        other = _in_thread(lambda: (len(STATE.modes), STATE.intercept, (a + 1).neg().sum().item()))
        assert other == (0, False, -6.0)
        a.exp()
    assert m.calls == ["exp"]  # the other thread's add/neg/sum did not reach this mode

    def own_mode():
        with _Counting() as mine:
            a.neg()
        return mine.calls
    with _Counting() as outer:
        assert _in_thread(own_mode) == ["neg"]
    assert outer.calls == []
    assert STATE.modes == [] and STATE.intercept is False


def test_anomaly_mode_is_process_wide_like_torch():
    for lib in (torch, ember):
        with lib.autograd.set_detect_anomaly(True):
            assert _in_thread(lib.is_anomaly_enabled) is True, lib
        assert _in_thread(lib.is_anomaly_enabled) is False


def test_forward_ad_in_threads_each_inside_its_own_dual_level():
    # documented deviation: ember's dual levels belong to the thread that enters them
    fwAD = ember.autograd.forward_ad
    out = [None] * 3

    def work(i):
        with fwAD.dual_level():
            x = fwAD.make_dual(ember.full((2,), float(i)), ember.ones(2))
            out[i] = fwAD.unpack_dual((x * x).sin()).tangent.numpy()
    with fwAD.dual_level():
        _run_threads(3, work)
    for i, r in enumerate(out):
        np.testing.assert_allclose(r, 2 * i * np.cos(float(i * i)) * np.ones(2), rtol=1e-6)
    assert SHARED.forward == 0


def test_node_sequence_numbers_are_unique_across_threads():
    before = SHARED.seq
    x = ember.ones(2, requires_grad=True)
    seqs = [[] for _ in range(4)]

    def work(i):
        for _ in range(200):
            seqs[i].append((x * 2).grad_fn.seq)
    _run_threads(4, work)
    flat = [s for lst in seqs for s in lst]
    assert len(set(flat)) == len(flat) == 800
    assert min(flat) > before


# ---- concurrent backward --------------------------------------------------------------

@pytest.mark.parametrize("size", [3, 200_000])
def test_concurrent_backward_on_shared_leaves_accumulates_every_gradient(size):
    w = ember.full((size,), 2.0, requires_grad=True)
    b = ember.zeros(size, requires_grad=True)
    steps = 10

    def work(i):
        for _ in range(steps):
            ((w * w) * float(i + 1) + b).sum().backward()  # d/dw = 2 w (i+1), d/db = 1
    _run_threads(4, work)
    np.testing.assert_array_equal(w.grad.numpy(), np.full(size, steps * 4.0 * 10))
    np.testing.assert_array_equal(b.grad.numpy(), np.full(size, steps * 4.0))


def test_concurrent_backward_through_one_shared_graph_with_retain_graph():
    # torch allows several threads to backprop one graph when it is retained
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = (x ** 3).sum()

        def work(i):
            for _ in range(5):
                h.backward(retain_graph=True)
        _run_threads(4, work)
        np.testing.assert_allclose(np.asarray(x.grad.detach()), 20 * 3 * np.array([1.0, 4.0, 9.0]),
                                   rtol=1e-6, err_msg=str(lib))


def test_concurrent_autograd_grad_and_retained_grads():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    results = [None] * 4
    mid = ember.zeros(2, requires_grad=True) * 1.0
    mid.retain_grad()
    shared_out = (mid * 5).sum()

    def work(i):
        y = (x * float(i)).exp().sum()
        results[i] = ember.autograd.grad(y, x)[0].numpy()
        for _ in range(10):
            shared_out.backward(retain_graph=True)
    _run_threads(4, work)
    for i, r in enumerate(results):
        np.testing.assert_allclose(r, i * np.exp(i * np.array([1.0, -2.0])), rtol=1e-6)
    assert x.grad is None  # autograd.grad does not accumulate
    np.testing.assert_array_equal(mid.grad.numpy(), [200.0, 200.0])


def test_create_graph_backward_from_threads():
    x = ember.tensor([0.5, 1.5], requires_grad=True)

    def work(i):
        (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)  # 3x^2
        g.sum().backward()  # d/dx 3x^2 = 6x, accumulated per thread
    _run_threads(4, work)
    np.testing.assert_allclose(x.grad.numpy(), 4 * 6 * np.array([0.5, 1.5]), rtol=1e-6)


# ---- in-place updates from several threads --------------------------------------------

def test_version_counter_counts_every_inplace_write_from_threads():
    base = ember.zeros(4, 1000)
    per_thread = 500

    def work(i):
        row = base[i]  # disjoint views: values are exact, the counter is shared with base
        for _ in range(per_thread):
            row.add_(1.0)
    _run_threads(4, work)
    np.testing.assert_array_equal(base.numpy(), np.full((4, 1000), float(per_thread)))
    assert _version_of(base)[0] == 4 * per_thread
    assert _version_of(base[0])[0] == 4 * per_thread


def test_inplace_write_from_another_thread_is_caught_by_backward():
    for lib in (torch, ember):
        a = lib.ones(3, requires_grad=True)
        b = a * 1.0
        out = (b * b).sum()  # saves b
        _in_thread(lambda: b.add_(1.0))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


def test_vmap_and_grad_transforms_run_concurrently_in_threads():
    # each thread's vmap levels and rules live on its own mode stack
    w = ember.tensor([[1.0, -2.0], [0.5, 3.0]])
    xs = [ember.tensor(np.random.default_rng(i).standard_normal((6, 2)).astype(np.float32))
          for i in range(4)]
    got = [None] * 4

    def loss(x):
        return ((x @ w).tanh() ** 2).sum()

    def work(i):
        for _ in range(5):
            got[i] = ember.func.vmap(ember.func.grad(loss))(xs[i]).numpy()
    _run_threads(4, work)
    for i in range(4):
        tw = torch.tensor(w.numpy())
        ref = torch.func.vmap(torch.func.grad(lambda x: ((x @ tw).tanh() ** 2).sum()))(
            torch.tensor(xs[i].numpy()))
        np.testing.assert_allclose(got[i], ref.numpy(), rtol=1e-5, atol=1e-6)
