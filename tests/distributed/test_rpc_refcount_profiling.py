"""RRef reference counting across 3 workers (an owner drops a value once no worker holds an
RRef to it, forks to third workers included) and RPC profiling (remote calls show up in
the caller's profile with the callee's operator events).  One ``mpiexec -n 3`` launch runs
every case; worker0 drives.  Also the rank program: ``python test_rpc_refcount_profiling.py``."""
import gc
import os
import subprocess
import sys
import time
import traceback

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from dist_helpers import _env, free_port  # noqa: E402

CASES = ["remote_value_freed", "fork_to_third_worker", "owner_rref_shared", "profile_sync",
         "profile_async_remote", "profiler_api"]
_HELD = []


# ---------------------------------------------------------------------------------------
# functions the workers call on each other
# ---------------------------------------------------------------------------------------
def owned_count():
    from ember.distributed.rpc import _state
    gc.collect()
    return len(_state.agent().owned)


def payload(n):
    import ember
    return ember.arange(float(n))


def hold(rref):
    _HELD.append(rref)
    return len(_HELD)


def fetch_held():
    return _HELD[-1].to_here()


def drop():
    _HELD.clear()
    gc.collect()


def udf_ops(x):
    import ember
    return ember.mul(x, 2).sum() + ember.tanh(x).mean()


def _wait_until(cond, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gc.collect()
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting until {what}")


def _case(name):
    import ember
    import ember.distributed.rpc as rpc
    from ember.distributed.rpc import _state
    if name == "remote_value_freed":
        base = rpc.rpc_sync("worker1", owned_count)
        r = rpc.remote("worker1", payload, args=(5,))
        np.testing.assert_array_equal(r.to_here().numpy(), np.arange(5.0))
        assert rpc.rpc_sync("worker1", owned_count) == base + 1
        del r
        _wait_until(lambda: rpc.rpc_sync("worker1", owned_count) == base,
                    "worker1 released the value")
    elif name == "fork_to_third_worker":
        base = rpc.rpc_sync("worker1", owned_count)
        r = rpc.remote("worker1", payload, args=(3,))
        assert rpc.rpc_sync("worker2", hold, args=(r,)) == 1
        del r
        gc.collect()
        time.sleep(0.3)
        # worker2 still holds it: the value stays, and worker2 can fetch it
        assert rpc.rpc_sync("worker1", owned_count) == base + 1
        np.testing.assert_array_equal(rpc.rpc_sync("worker2", fetch_held).numpy(),
                                      np.arange(3.0))
        rpc.rpc_sync("worker2", drop)
        _wait_until(lambda: rpc.rpc_sync("worker1", owned_count) == base,
                    "worker1 released the forked value")
    elif name == "owner_rref_shared":
        agent = _state.agent()
        gc.collect()
        base = len(agent.owned)
        mine = rpc.RRef(ember.full((2,), 7.0))
        assert len(agent.owned) == base + 1
        rpc.rpc_sync("worker1", hold, args=(mine,))
        rid = mine._id
        del mine
        gc.collect()
        time.sleep(0.3)
        assert rid in agent.owned          # worker1 still holds it
        rpc.rpc_sync("worker1", drop)
        _wait_until(lambda: rid not in agent.owned, "worker0 released its own value")
        assert len(agent.owned) == base
    elif name == "profile_sync":
        x = ember.linspace(-1, 1, 8)
        with ember.autograd.profiler.profile() as prof:
            local = ember.add(x, 1)
            got = rpc.rpc_sync("worker1", udf_ops, args=(x,))
            ember.sub(local, 1)
        np.testing.assert_allclose(got.item(), udf_ops(x).item(), rtol=1e-6)
        events = prof.function_events
        call = [e for e in events if e.name == "rpc_sync#udf_ops(worker0 -> worker1)"]
        assert len(call) == 1, [e.name for e in events]
        call = call[0]
        remote = [e for e in events if e.is_remote]
        names = {e.name for e in remote}
        for op in ("aten::mul", "aten::sum", "aten::tanh", "aten::mean", "aten::add"):
            assert f"rpc_sync#udf_ops(worker0 -> worker1)#remote_op: {op}" in names, names
        assert all(e.node_id == 1 for e in remote)
        for e in remote:
            if e.cpu_parent is None or not e.cpu_parent.is_remote:
                assert e.cpu_parent is call
            assert e.time_range.start >= call.time_range.start
            assert e.time_range.end - e.time_range.start >= 0
        top = [e for e in remote if e.cpu_parent is call]
        busy = sum(e.time_range.end - e.time_range.start for e in top)
        assert 0 < busy <= call.time_range.end - call.time_range.start
        # local ops after the call are not nested in it
        sub = [e for e in events if e.name == "aten::sub"]
        assert sub and sub[0].cpu_parent is None
    elif name == "profile_async_remote":
        x = ember.ones(4)
        with ember.autograd.profiler.profile() as prof:
            fut = rpc.rpc_async("worker2", udf_ops, args=(x,))
            r = rpc.remote("worker1", udf_ops, args=(x,))
            fut.wait()
            r.to_here()
        names = [e.name for e in prof.function_events]
        assert "rpc_async#udf_ops(worker0 -> worker2)" in names, names
        assert "rpc_remote#udf_ops(worker0 -> worker1)" in names, names
        nodes = {e.node_id for e in prof.function_events if e.is_remote and "aten::mul" in e.name}
        assert nodes == {1, 2}, nodes
    elif name == "profiler_api":
        x = ember.ones(3)
        with ember.profiler.profile() as prof:
            rpc.rpc_sync("worker2", udf_ops, args=(x,))
        keys = {e.key for e in prof.key_averages()}
        assert "rpc_sync#udf_ops(worker0 -> worker2)#remote_op: aten::tanh" in keys, keys
        assert "remote_op: aten::mul" in prof.key_averages().table(max_name_column_width=120)
    else:
        raise KeyError(name)


def main():
    import ember.distributed.rpc as rpc
    rank = int(os.environ.get("PMI_RANK", "0"))
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=3)
    if rank == 0:
        for name in CASES:
            try:
                _case(name)
                print(f"PASS {name}", flush=True)
            except BaseException:  # noqa: BLE001 - report and go on to the next case
                print(f"FAIL {name}\n{traceback.format_exc()}END {name}", flush=True)
    rpc.shutdown()


@pytest.fixture(scope="module")
def rpc_run():
    env = dict(_env(), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    proc = subprocess.run([mpiexec, "-n", "3", sys.executable, HERE], capture_output=True,
                          text=True, timeout=240, env=env)
    assert proc.returncode == 0, f"rank program failed ({proc.returncode}):\n{proc.stdout}\n" \
                                 f"{proc.stderr[-6000:]}"
    return proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_case(rpc_run, case):
    if f"PASS {case}\n" not in rpc_run:
        start = rpc_run.find(f"FAIL {case}")
        detail = rpc_run[start:rpc_run.find(f"END {case}")] if start >= 0 else rpc_run
        pytest.fail(detail)


if __name__ == "__main__":
    main()
