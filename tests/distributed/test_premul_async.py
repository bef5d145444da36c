"""ReduceOp.PREMUL_SUM against NumPy, async launches that do not wait for late peers, and
the collective-mismatch check (now made at wait time) on 2 and 3 real ranks."""
import pytest

from dist_helpers import run_ranks

pytestmark = pytest.mark.slow

PREMUL = r'''
import numpy as np, ember, ember.distributed as dist
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
x = lambda k, shape=(n * 2, 3): np.random.default_rng(k).standard_normal(shape)
f = lambda k: 0.5 * (k + 1) - 0.2 * k * k          # each rank's own factor
want = sum(f(k) * x(k) for k in range(n))
for dtype, tol in ((ember.float64, 1e-12), (ember.float32, 1e-5), (ember.float16, 2e-2),
                   (ember.complex128, 1e-12)):
    for factor in (f(r), ember.tensor([f(r)], dtype=ember.float64)):
        op = dist._make_nccl_premul_sum(factor)
        assert op == dist.ReduceOp.PREMUL_SUM
        t = ember.tensor(x(r)).to(dtype)
        dist.all_reduce(t, op=op)
        assert np.allclose(t.numpy().astype(want.dtype), want, atol=tol), (dtype, t, want)
    # reduce: the destination gets the scaled sum, the others keep their input
    t = ember.tensor(x(r)).to(dtype)
    dist.reduce(t, dst=n - 1, op=dist._make_nccl_premul_sum(f(r)))
    exp = want if r == n - 1 else x(r)
    assert np.allclose(t.numpy().astype(want.dtype), exp, atol=tol), ("reduce", dtype)
    # reduce_scatter_tensor and reduce_scatter: rank r gets its block; the input is unchanged
    src = ember.tensor(x(r)).to(dtype)
    out = ember.empty(2, 3, dtype=dtype)
    dist.reduce_scatter_tensor(out, src, op=dist._make_nccl_premul_sum(f(r)))
    assert np.allclose(out.numpy().astype(want.dtype), want[2 * r:2 * r + 2], atol=tol)
    assert np.allclose(src.numpy().astype(want.dtype), x(r), atol=tol), "input changed"
    out = ember.empty(2, 3, dtype=dtype)
    dist.reduce_scatter(out, list(src.chunk(n)), op=dist._make_nccl_premul_sum(f(r)))
    assert np.allclose(out.numpy().astype(want.dtype), want[2 * r:2 * r + 2], atol=tol)
    # async
    t = ember.tensor(x(r)).to(dtype)
    w = dist.all_reduce(t, op=dist._make_nccl_premul_sum(f(r)), async_op=True)
    w.wait()
    assert np.allclose(t.numpy().astype(want.dtype), want, atol=tol)
for bad, exc in ((lambda: dist.all_reduce(ember.ones(2), op=dist.ReduceOp.PREMUL_SUM),
                  ValueError),
                 (lambda: dist.all_reduce(ember.ones(2, dtype=ember.int64),
                                          op=dist._make_nccl_premul_sum(2.0)), TypeError),
                 (lambda: dist._make_nccl_premul_sum(ember.ones(2)), ValueError),
                 (lambda: dist._make_nccl_premul_sum("2"), TypeError)):
    try:
        bad()
        raise SystemExit("no error")
    except exc as e:
        assert "PREMUL_SUM" in str(e) or "factor" in str(e), str(e)
print(f"RANK{r} OK", flush=True)
dist.destroy_process_group()
'''

ASYNC = r'''
import time, numpy as np, ember, ember.distributed as dist
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
dist.all_reduce(ember.ones(1))
for step in range(3):
    # the last rank arrives 0.4 s late: the others' launches must return at once
    if r == n - 1:
        time.sleep(0.4)
    t = ember.full((1000,), float(r + 1))
    t0 = time.perf_counter()
    w = dist.all_reduce(t, async_op=True)
    w2 = dist.broadcast(u := ember.full((10,), float(r)), src=0, async_op=True)
    launch = time.perf_counter() - t0
    if r != n - 1:
        assert launch < 0.1, f"async launch waited {launch:.3f}s for the late rank"
        assert not w.is_completed()
    w.wait()
    w2.wait()
    assert w.is_completed() and np.all(t.numpy() == n * (n + 1) / 2)
    assert np.all(u.numpy() == 0)
    assert w.get_future().value()[0] is t
print(f"RANK{r} OK", flush=True)
dist.destroy_process_group()
'''

MISMATCH_ASYNC = r'''
import os, time, ember, ember.distributed as dist
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
dist.all_reduce(ember.ones(3))
t0 = time.perf_counter()
# the last rank calls a different collective: launches return, the wait names both
if r == n - 1:
    w = dist.all_gather_into_tensor(ember.zeros(4 * n), ember.ones(4), async_op=True)
else:
    w = dist.all_reduce(ember.ones(4), async_op=True)
try:
    w.wait()
    raise SystemExit("no error")
except dist.DistBackendError as e:
    msg = str(e)
    assert "mismatch" in msg and "all_reduce" in msg and "all_gather_into_tensor" in msg, msg
    assert "sequence number 2" in msg, msg
    assert time.perf_counter() - t0 < 10
try:
    dist.all_reduce(ember.ones(1))
    raise SystemExit("group still usable")
except dist.DistBackendError as e:
    assert "unusable" in str(e), str(e)
print(f"RANK{r} OK", flush=True)
os._exit(0)  # the mismatched MPI requests can not be cancelled: leave without finalizing
'''


def _ok(src, n, timeout=120, env=None):
    rc, out = run_ranks(src, n, timeout=timeout, env=env)
    assert rc == 0, out[-4000:]
    for r in range(n):
        assert f"RANK{r} OK" in out, out[-4000:]


@pytest.mark.parametrize("n", [2, 3])
def test_premul_sum_against_numpy(n):
    _ok(PREMUL, n)


@pytest.mark.parametrize("n", [2, 3])
def test_async_launch_does_not_wait_for_late_peer(n):
    _ok(ASYNC, n)


@pytest.mark.parametrize("n", [2, 3])
def test_mismatched_async_collectives_fail_clearly(n):
    _ok(MISMATCH_ASYNC, n)


def test_check_off_still_runs_collectives():
    _ok(ASYNC, 2, env={"EMBER_DISTRIBUTED_CHECK": "0"})
