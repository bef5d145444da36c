"""ember.distributed.rpc, distributed autograd and DistributedOptimizer on 2 real workers
(one ``mpiexec -n 2`` launch runs every case; rank 0 drives, rank 1 serves).  This file is
also the rank program: ``python test_rpc.py``.  Gradients are checked against the same
computation done in one process with ember.autograd."""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from ember.distributed.rpc import functions as rpc_functions

HERE = os.path.abspath(__file__)
CASES = ["values", "async_then", "remote_rref", "rref_proxies", "rref_fork", "refused",
         "remote_error", "timeout", "dist_autograd", "dist_autograd_chain",
         "dist_optimizer", "async_execution", "remote_module"]


# ---------------------------------------------------------------------------------------
# functions and classes the workers call on each other
# ---------------------------------------------------------------------------------------
def add_mul(a, b, scale=1.0):
    return (a + b) * scale


def raise_value_error(msg):
    raise ValueError(msg)


def slow(seconds):
    time.sleep(seconds)
    return seconds


class Counter:
    def __init__(self, start):
        self.n = start

    def add(self, k):
        self.n += k
        return self.n

    def get(self):
        return self.n


def make_linear(seed):
    import ember
    ember.manual_seed(seed)
    return ember.nn.Linear(3, 2)


def call_forward(rref, x):
    return rref.local_value()(x)


def param_rrefs(rref):
    from ember.distributed.rpc import RRef
    return [RRef(p) for p in rref.local_value().parameters()]


def grads_of(rref, context_id):
    import ember.distributed.autograd as dist_autograd
    g = dist_autograd.get_gradients(context_id)
    return [g[p].clone() for p in rref.local_value().parameters()]


def tanh_then_back(x, back_to):
    """Runs on worker1: one op, then a call back to worker0 (a 3-hop autograd chain)."""
    import ember
    import ember.distributed.rpc as rpc
    return rpc.rpc_sync(back_to, square_sum, args=(ember.tanh(x),))


def square_sum(y):
    return (y * y).sum()


@rpc_functions.async_execution
def async_double_plus_one(x):
    """Replies once its own nested call (back to worker0) has completed."""
    import ember.distributed.rpc as rpc
    return rpc.rpc_async("worker0", add_mul, args=(x, x)).then(lambda f: f.value() + 1)


# ---------------------------------------------------------------------------------------
# rank program
# ---------------------------------------------------------------------------------------
def _case(name):
    import ember
    import ember.distributed.autograd as dist_autograd
    import ember.distributed.rpc as rpc
    from ember.distributed.optim import DistributedOptimizer
    a = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    b = ember.ones(2, 3, dtype=ember.float64)
    if name == "values":
        out = rpc.rpc_sync("worker1", add_mul, args=(a, b), kwargs={"scale": 2.0})
        np.testing.assert_array_equal(out.numpy(), (a.numpy() + 1.0) * 2)
        assert out.dtype == ember.float64
        out = rpc.rpc_sync(1, ember.add, args=(a, a))
        np.testing.assert_array_equal(out.numpy(), a.numpy() * 2)
        info = rpc.get_worker_info("worker1")
        assert (info.name, info.id) == ("worker1", 1)
        assert rpc.get_worker_info() == rpc.WorkerInfo("worker0", 0)
        assert rpc.rpc_sync(info, add_mul, args=(2, 3)) == 5
    elif name == "async_then":
        futs = [rpc.rpc_async("worker1", add_mul, args=(a, float(i))) for i in range(4)]
        chained = futs[0].then(lambda f: f.value().sum().item())
        for i, f in enumerate(futs):
            np.testing.assert_array_equal(f.wait().numpy(), a.numpy() + i)
        assert chained.wait() == float((a.numpy()).sum())
    elif name == "remote_rref":
        r = rpc.remote("worker1", add_mul, args=(a, a))
        assert not r.is_owner() and r.owner_name() == "worker1" and r.owner().id == 1
        np.testing.assert_array_equal(r.to_here().numpy(), a.numpy() * 2)
        assert r.confirmed_by_owner()
        try:
            r.local_value()
        except RuntimeError as e:
            assert "non-local" in str(e)
        else:
            raise AssertionError("local_value on a non-owner must raise")
        local = rpc.remote("worker0", add_mul, args=(1, 2))
        assert local.is_owner() and local.local_value() == 3 and local.to_here() == 3
    elif name == "rref_proxies":
        c = rpc.remote("worker1", Counter, args=(10,))
        assert c.rpc_sync().add(5) == 15
        assert c.rpc_async().add(1).wait() == 16
        assert c.remote().get().to_here() == 16
        assert rpc.rpc_sync("worker1", Counter.get, args=(c.to_here(),)) == 16
    elif name == "rref_fork":
        mine = rpc.RRef(a * 3)
        assert mine.is_owner()
        # worker1 receives the RRef and fetches its value from us, its owner
        got = rpc.rpc_sync("worker1", type(mine).to_here, args=(mine,))
        np.testing.assert_array_equal(got.numpy(), a.numpy() * 3)
    elif name == "refused":
        marker = os.path.join(tempfile.gettempdir(), f"ember_rpc_refused_{os.getpid()}")
        import pickle
        import subprocess as sp
        for fn, args in [(os.system, (f"touch {marker}",)), (eval, ("1+1",)),
                         (exec, ("x=1",)), (sp.Popen, (["touch", marker],))]:
            try:
                rpc.rpc_sync("worker1", fn, args=args)
            except pickle.UnpicklingError as e:
                assert "refused" in str(e), str(e)
            else:
                raise AssertionError(f"{fn} was not refused")
        assert not os.path.exists(marker)
        c = rpc.remote("worker1", Counter, args=(1,))
        try:
            c.rpc_sync().__globals__()
        except AttributeError as e:
            assert "refused" in str(e)
        else:
            raise AssertionError("dunder proxy call was not refused")
        assert c.rpc_sync().get() == 1  # the worker still serves
    elif name == "remote_error":
        try:
            rpc.rpc_sync("worker1", raise_value_error, args=("bad value 42",))
        except ValueError as e:
            assert "bad value 42" in str(e) and "worker1" in str(e)
        else:
            raise AssertionError("remote ValueError not raised")
        r = rpc.remote("worker1", raise_value_error, args=("in remote",))
        try:
            r.to_here()
        except ValueError as e:
            assert "in remote" in str(e)
        else:
            raise AssertionError("remote() error not raised by to_here")
    elif name == "timeout":
        t0 = time.monotonic()
        try:
            rpc.rpc_sync("worker1", slow, args=(2.0,), timeout=0.2)
        except RuntimeError as e:
            assert "timeout" in str(e) and "200 ms" in str(e), str(e)
        else:
            raise AssertionError("no timeout")
        assert time.monotonic() - t0 < 1.5
        assert rpc.rpc_sync("worker1", slow, args=(0.01,)) == 0.01
    elif name == "dist_autograd":
        ember.manual_seed(0)
        w0 = ember.randn(4, 3, requires_grad=True)
        x = ember.randn(5, 4)
        lin = rpc.remote("worker1", make_linear, args=(7,))
        with dist_autograd.context() as cid:
            h = x @ w0
            y = rpc.rpc_sync("worker1", call_forward, args=(lin, h))
            loss = (y * y).sum()
            dist_autograd.backward(cid, [loss])
            g_local = dist_autograd.get_gradients(cid)
            g_remote = rpc.rpc_sync("worker1", grads_of, args=(lin, cid))
        assert w0.grad is None  # distributed autograd never touches .grad
        ref = make_linear(7)
        w0r = w0.detach().clone().requires_grad_(True)
        lr = (ref(x @ w0r) ** 2).sum()
        gw0, gw, gb = ember.autograd.grad(lr, [w0r, ref.weight, ref.bias])
        np.testing.assert_allclose(g_local[w0].numpy(), gw0.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_remote[0].numpy(), gw.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_remote[1].numpy(), gb.numpy(), rtol=1e-5, atol=1e-6)
        assert len(g_local) == 1
    elif name == "dist_autograd_chain":
        ember.manual_seed(1)
        w = ember.randn(3, requires_grad=True)
        with dist_autograd.context() as cid:
            loss = rpc.rpc_sync("worker1", tanh_then_back, args=(w * 2, "worker0"))
            loss = loss + w.sum()  # w reaches the loss twice: locally and across 3 hops
            dist_autograd.backward(cid, [loss])
            g = dist_autograd.get_gradients(cid)[w]
        wr = w.detach().clone().requires_grad_(True)
        (gr,) = ember.autograd.grad((ember.tanh(wr * 2) ** 2).sum() + wr.sum(), [wr])
        np.testing.assert_allclose(g.numpy(), gr.numpy(), rtol=1e-5, atol=1e-6)
    elif name == "dist_optimizer":
        ember.manual_seed(2)
        w0 = ember.nn.Parameter(ember.randn(4, 3))
        x = ember.randn(5, 4)
        lin = rpc.remote("worker1", make_linear, args=(11,))
        params = [rpc.RRef(w0)] + rpc.rpc_sync("worker1", param_rrefs, args=(lin,))
        opt = DistributedOptimizer(ember.optim.SGD, params, lr=0.1)
        ref = make_linear(11)
        w0r = ember.nn.Parameter(w0.detach().clone())
        ref_opt = ember.optim.SGD([w0r] + list(ref.parameters()), lr=0.1)
        for _ in range(2):
            with dist_autograd.context() as cid:
                y = rpc.rpc_sync("worker1", call_forward, args=(lin, x @ w0))
                dist_autograd.backward(cid, [(y * y).mean()])
                opt.step(cid)
            ref_opt.zero_grad()
            (ref(x @ w0r) ** 2).mean().backward()
            ref_opt.step()
        np.testing.assert_allclose(w0.detach().numpy(), w0r.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        remote_now = [p.to_here() for p in params[1:]]
        for got, want in zip(remote_now, ref.parameters()):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
    elif name == "async_execution":
        out = rpc.rpc_sync("worker1", async_double_plus_one, args=(a,))
        np.testing.assert_array_equal(out.numpy(), a.numpy() * 2 + 1)
    elif name == "remote_module":
        from ember.distributed.nn import RemoteModule
        ember.manual_seed(3)
        rm = RemoteModule("worker1/cpu", ember.nn.Linear, args=(4, 2))
        same = RemoteModule("rank:1/cpu", ember.nn.Linear, args=(4,), kwargs={"out_features": 2})
        assert same.on.name == "worker1" and rm.get_module_rref().owner_name() == "worker1"
        x = ember.randn(3, 4)
        ref = ember.nn.Linear(4, 2)
        rparams = rm.remote_parameters()
        with ember.no_grad():
            for p, r in zip(ref.parameters(), rparams):
                p.copy_(r.to_here())
        np.testing.assert_allclose(rm(x).detach().numpy(), ref(x).detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(rm.forward_async(x).wait().detach().numpy(),
                                   ref(x).detach().numpy(), rtol=1e-6)
        try:
            rm.parameters()
        except ValueError as e:
            assert "parameters" in str(e)
        else:
            raise AssertionError("RemoteModule.parameters must raise")
        opt = DistributedOptimizer(ember.optim.SGD, rparams, lr=0.5)
        ref_opt = ember.optim.SGD(ref.parameters(), lr=0.5)
        with dist_autograd.context() as cid:
            dist_autograd.backward(cid, [rm(x).sum()])
            opt.step(cid)
        ref_opt.zero_grad()
        ref(x).sum().backward()
        ref_opt.step()
        for r, p in zip(rm.remote_parameters(), ref.parameters()):
            np.testing.assert_allclose(r.to_here().detach().numpy(), p.detach().numpy(),
                                       rtol=1e-5, atol=1e-6)
    else:
        raise KeyError(name)


def _spawn_worker(rank, port, out_dir):
    """One rank started by ember.multiprocessing.spawn (its own ``mpiexec -n 1``)."""
    import ember
    import ember.distributed.rpc as rpc
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2)
    if rank == 1:
        x = ember.arange(4, dtype=ember.float32)
        r = rpc.remote("worker0", add_mul, args=(x, x), kwargs={"scale": 0.5})
        got = rpc.rpc_sync("worker0", add_mul, args=(r.to_here(), 1.0))
        with open(os.path.join(out_dir, "spawn.txt"), "w") as f:
            f.write(" ".join(str(v) for v in got.tolist()))
    rpc.shutdown()


def spawn_main(out_dir):
    import ember.multiprocessing as mp
    mp.spawn(_spawn_worker, args=(_free_port(), out_dir), nprocs=2, join=True)


def main(with_pg=False):
    import traceback
    import ember
    import ember.distributed as dist
    import ember.distributed.rpc as rpc
    rank = int(os.environ.get("PMI_RANK", os.environ.get("RANK", "0")))
    if with_pg:
        dist.init_process_group("gloo")
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2)
    if with_pg:
        # collectives on the main thread while the RPC progress thread runs beside them:
        # (1 + 2) doubled twice
        t = ember.full((3,), float(rank + 1))
        for _ in range(3):
            dist.all_reduce(t)
        print(f"ALLREDUCE {rank} {t.tolist()}", flush=True)
    if rank == 0:
        for name in (CASES[:4] if with_pg else CASES):
            try:
                _case(name)
                print(f"PASS {name}", flush=True)
            except BaseException:  # noqa: BLE001 - report and go on to the next case
                print(f"FAIL {name}\n{traceback.format_exc()}END {name}", flush=True)
    rpc.shutdown()
    if with_pg:
        dist.destroy_process_group()


# ---------------------------------------------------------------------------------------
# pytest side
# ---------------------------------------------------------------------------------------
def _free_port():
    sys.path.insert(0, os.path.dirname(HERE))
    from dist_helpers import free_port
    return free_port()


def _mpirun(*extra):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, HERE, *extra],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, f"rank program failed ({proc.returncode}):\n{proc.stdout}\n" \
                                 f"{proc.stderr[-6000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def rpc_run():
    return _mpirun()


@pytest.mark.slow
def test_rpc_beside_process_group():
    """init_rpc after init_process_group shares its store; collectives and RPC coexist."""
    out = _mpirun("pg")
    for rank in (0, 1):
        assert f"ALLREDUCE {rank} [12.0, 12.0, 12.0]" in out, out
    for case in CASES[:4]:
        assert f"PASS {case}\n" in out, out


@pytest.mark.slow
def test_rpc_spawned_workers(tmp_path):
    """Workers started as separate launches (ember.multiprocessing.spawn) join one world."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, HERE, "spawn", str(tmp_path)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-6000:]}"
    got = [float(v) for v in (tmp_path / "spawn.txt").read_text().split()]
    assert got == [x + 1.0 for x in (0.0, 1.0, 2.0, 3.0)]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_rpc_case(rpc_run, case):
    if f"PASS {case}\n" not in rpc_run:
        start = rpc_run.find(f"FAIL {case}")
        detail = rpc_run[start:rpc_run.find(f"END {case}")] if start >= 0 else rpc_run
        pytest.fail(f"case {case} did not pass on the workers:\n{detail}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "spawn":
        spawn_main(sys.argv[2])
    else:
        main(with_pg="pg" in sys.argv[1:])
