"""DistributedDataParallel on 2 real ranks (mpiexec) against single-process training on the
concatenated batch.  This file is also the rank program: ``python test_ddp.py CASE``."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
NPROC = 2


def _free_port():
    sys.path.insert(0, os.path.dirname(HERE))
    from dist_helpers import free_port
    return free_port()


def launch(path, case, nproc=NPROC, timeout=90):
    """Runs ``path case`` on ``nproc`` ranks under mpiexec; returns its stdout."""
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    proc = subprocess.run([mpiexec, "-n", str(nproc), sys.executable, path, case],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"rank program failed ({proc.returncode}):\n{proc.stdout}\n" \
                                 f"{proc.stderr[-6000:]}"
    return proc.stdout


# ---------------------------------------------------------------------------------------
# rank program
# ---------------------------------------------------------------------------------------
def _setup():
    import ember.distributed as dist
    dist.init_process_group("gloo")
    return dist, dist.get_rank(), dist.get_world_size()


def _mlp(torch, seed, spare=False):
    torch.manual_seed(seed)
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 32)
            self.fc2 = nn.Linear(32, 32)
            self.fc3 = nn.Linear(32, 3)
            self.spare = nn.Linear(32, 3) if spare else None

        def forward(self, x, use_spare=False):
            h = torch.tanh(self.fc2(torch.tanh(self.fc1(x))))
            return self.fc3(h) + (self.spare(h) if use_spare else 0)

    return Net()


def _data(torch, steps, world, per_rank=5):
    g = torch.Generator().manual_seed(123)
    xs = [torch.randn(world * per_rank, 6, generator=g) for _ in range(steps)]
    ys = [torch.randn(world * per_rank, 3, generator=g) for _ in range(steps)]
    return xs, ys


def _assert_close(a, b, what, atol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    if not np.allclose(a, b, atol=atol, rtol=1e-4):
        raise AssertionError(f"{what}: max diff {np.abs(a - b).max()}")


def case_equivalence():
    """Construction broadcast, DDP == single process on the concatenated batch (several
    buckets, with and without gradient_as_bucket_view / static_graph), state_dict prefix."""
    import ember as torch
    from ember.nn.parallel import DistributedDataParallel as DDP
    dist, rank, world = _setup()
    steps, n = 4, 5
    xs, ys = _data(torch, steps, world, n)
    for kwargs in ({}, {"gradient_as_bucket_view": True}, {"static_graph": True},
                   {"bucket_cap_mb": 0.001}):
        spare = kwargs.get("static_graph", False)  # an unused layer, found in iteration 1
        ref = _mlp(torch, 0, spare)
        model = _mlp(torch, 0 if rank == 0 else 99, spare)  # rank 1 differs: DDP broadcasts
        ddp = DDP(model, bucket_cap_mb=kwargs.pop("bucket_cap_mb", 0.002), **kwargs)
        for p, q in zip(model.parameters(), ref.parameters()):
            _assert_close(p.detach().numpy(), q.detach().numpy(), "broadcast at construction")
        assert len(ddp.reducer.buckets) > 1
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        ropt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
        for x, y in zip(xs, ys):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(ddp(x[rank * n:(rank + 1) * n]),
                                                y[rank * n:(rank + 1) * n])
            loss.backward()
            if kwargs.get("gradient_as_bucket_view"):
                grads = {id(t) for b in ddp.reducer.buckets for t in b.views}
                assert all(id(p.grad) in grads for p in model.parameters()
                           if p.grad is not None)
            opt.step()
            ropt.zero_grad()
            torch.nn.functional.mse_loss(ref(x), y).backward()
            ropt.step()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            if name.startswith("spare"):
                assert p.grad is None, "an unused parameter got a gradient"
                continue
            _assert_close(p.detach().numpy(), q.detach().numpy(), f"{kwargs} {name}")
    keys = list(ddp.state_dict())
    assert keys[0].startswith("module.") and "module.fc1.weight" in keys, keys
    print(f"rank {rank} ok")
    dist.destroy_process_group()


def case_features():
    """no_sync accumulation, find_unused_parameters, the unused-parameter error,
    broadcast_buffers, and that bucket all-reduces start during backward."""
    import ember as torch
    from ember.nn.parallel import DistributedDataParallel as DDP
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    dist, rank, world = _setup()
    n = 4
    xs, ys = _data(torch, 3, world, n)
    F = torch.nn.functional

    # no_sync: two local micro-batches, then one synced one == the sum over all of them
    ref = _mlp(torch, 1)
    ddp = DDP(_mlp(torch, 1), bucket_cap_mb=0.002)
    with ddp.no_sync():
        for x, y in zip(xs[:2], ys[:2]):
            F.mse_loss(ddp(x[rank * n:(rank + 1) * n]), y[rank * n:(rank + 1) * n]).backward()
    g_local = ddp.module.fc1.weight.grad.clone()
    F.mse_loss(ddp(xs[2][rank * n:(rank + 1) * n]), ys[2][rank * n:(rank + 1) * n]).backward()
    for x, y in zip(xs, ys):
        F.mse_loss(ref(x), y).backward()
    for (name, p), q in zip(ddp.module.named_parameters(), ref.parameters()):
        if q.grad is not None:
            _assert_close(p.grad.numpy(), q.grad.numpy(), f"no_sync {name}")
    other = torch.zeros_like(g_local)
    dist.all_reduce(other)
    assert not np.allclose(g_local.numpy() * world, other.numpy()), "no_sync synchronized"

    # find_unused_parameters: `spare` is used on rank 0 only; its gradient is still averaged
    ref = _mlp(torch, 2, spare=True)
    ddp = DDP(_mlp(torch, 2, spare=True), find_unused_parameters=True, bucket_cap_mb=0.002)
    for step in range(2):
        ddp.zero_grad()
        F.mse_loss(ddp(xs[step][rank * n:(rank + 1) * n], use_spare=rank == 0),
                   ys[step][rank * n:(rank + 1) * n]).backward()
    ref.zero_grad()
    # reference: rank 0's half uses spare, rank 1's does not; DDP averages the two means
    l0 = F.mse_loss(ref(xs[1][:n], use_spare=True), ys[1][:n])
    l1 = F.mse_loss(ref(xs[1][n:2 * n]), ys[1][n:2 * n])
    ((l0 + l1) / 2).backward()
    for (name, p), q in zip(ddp.module.named_parameters(), ref.parameters()):
        _assert_close(p.grad.numpy(), q.grad.numpy(), f"find_unused {name}")

    # a parameter without gradient and find_unused_parameters=False: torch's error
    ddp = DDP(_mlp(torch, 3, spare=True), bucket_cap_mb=0.002)
    F.mse_loss(ddp(xs[0][:n]), ys[0][:n]).backward()
    try:
        ddp(xs[0][:n])
    except RuntimeError as e:
        assert "find_unused_parameters=True" in str(e) and "spare.weight" in str(e), str(e)
    else:
        raise AssertionError("missing unused-parameter error")

    # broadcast_buffers: rank 0's running statistics reach rank 1 at every forward
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.BatchNorm1d(4))
    ddp = DDP(net)
    ddp(xs[0][rank * n:(rank + 1) * n]).sum().backward()
    mean0 = net[1].running_mean.clone()
    dist.broadcast(mean0, src=0)
    if rank == 1:
        assert not np.allclose(mean0.numpy(), net[1].running_mean.numpy())
    net.eval()
    with torch.no_grad():
        ddp(xs[1][rank * n:(rank + 1) * n])  # syncs buffers from rank 0 before running
    _assert_close(net[1].running_mean.numpy(), mean0.numpy(), "broadcast_buffers")
    ddp_nb = DDP(_mlp(torch, 4), broadcast_buffers=False)
    assert not ddp_nb.will_sync_module_buffers()

    # overlap: the first bucket (the last layers) is launched before backward reaches fc1
    events = []

    def hook(state, bucket):
        events.append(("bucket", bucket.index()))
        return default_hooks.allreduce_hook(state, bucket)

    model = _mlp(torch, 5)
    ddp = DDP(model, bucket_cap_mb=0.001)
    ddp.register_comm_hook(None, hook)
    model.fc1.weight.register_hook(lambda g: events.append(("fc1 grad", None)))
    F.mse_loss(ddp(xs[0][rank * n:(rank + 1) * n]), ys[0][rank * n:(rank + 1) * n]).backward()
    nb = len(ddp.reducer.buckets)
    assert nb >= 2 and events.index(("bucket", 0)) < events.index(("fc1 grad", None)), events
    assert [e[1] for e in events if e[0] == "bucket"] == list(range(nb)), events
    try:
        ddp.register_comm_hook(None, hook)
    except RuntimeError as e:
        assert "only be called once" in str(e)
    else:
        raise AssertionError("second register_comm_hook accepted")
    print(f"rank {rank} ok")
    dist.destroy_process_group()


def case_join():
    """Uneven inputs under ddp.join(): rank 0 has 3 batches, rank 1 has 5; the joined rank
    shadows the all-reduces with zeros and finally takes the last joiner's model."""
    import ember as torch
    from ember.nn.parallel import DistributedDataParallel as DDP
    dist, rank, world = _setup()
    F = torch.nn.functional
    n = 4
    xs, ys = _data(torch, 5, world, n)
    counts = [3, 5]
    for divide in (True, False):
        model = _mlp(torch, 6)
        ddp = DDP(model, bucket_cap_mb=0.002)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
        with ddp.join(divide_by_initial_world_size=divide):
            for x, y in list(zip(xs, ys))[:counts[rank]]:
                opt.zero_grad()
                F.mse_loss(ddp(x[rank * n:(rank + 1) * n]), y[rank * n:(rank + 1) * n]).backward()
                opt.step()
        ref = _mlp(torch, 6)
        ropt = torch.optim.SGD(ref.parameters(), lr=0.1)
        for step, (x, y) in enumerate(zip(xs, ys)):
            ropt.zero_grad()
            l0 = F.mse_loss(ref(x[:n]), y[:n])
            l1 = F.mse_loss(ref(x[n:2 * n]), y[n:2 * n])
            # after rank 0 joined, only rank 1's gradient remains: over 2 or over 1 rank
            loss = (l0 + l1) / 2 if step < 3 else (l1 / 2 if divide else l1)
            loss.backward()
            ropt.step()
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            _assert_close(p.detach().numpy(), q.detach().numpy(), f"join {divide} {name}")
    model = _mlp(torch, 6)
    ddp = DDP(model)
    try:
        with ddp.join(throw_on_early_termination=True):
            for x in xs[:counts[rank]]:
                ddp(x[rank * n:(rank + 1) * n]).sum().backward()
    except RuntimeError as e:
        assert "exhausted inputs" in str(e), str(e)
    else:
        raise AssertionError("throw_on_early_termination did not raise")
    print(f"rank {rank} ok")
    dist.destroy_process_group()


# ---------------------------------------------------------------------------------------
# pytest side
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("case", ["equivalence", "features", "join"])
def test_ddp_two_ranks(case):
    out = launch(HERE, case)
    assert out.count(" ok") == NPROC, out


def test_ddp_requires_process_group():
    import ember.nn as nn
    from ember.nn.parallel import DistributedDataParallel
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedDataParallel(nn.Linear(2, 2))


def test_data_parallel_cpu_is_transparent():
    import ember as torch
    import ember.nn as nn
    from ember.nn.parallel import data_parallel, gather, parallel_apply, replicate, scatter
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    dp = nn.DataParallel(lin, device_ids=[0])
    x = torch.randn(6, 3)
    assert torch.equal(dp(x), lin(x))
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    assert torch.equal(data_parallel(lin, x), lin(x))
    chunks = scatter(x, ["cpu", "cpu"])
    assert [tuple(c.shape) for c in chunks] == [(3, 3), (3, 3)]
    outs = parallel_apply(replicate(lin, ["cpu", "cpu"]), [(c,) for c in chunks])
    y = gather(outs, "cpu")
    assert torch.allclose(y, lin(x))
    y.sum().backward()
    # gradients through the replicas reach the original parameters
    assert torch.allclose(lin.weight.grad, x.sum(0).expand(2, 3))


if __name__ == "__main__":
    globals()[f"case_{sys.argv[1]}"]()
