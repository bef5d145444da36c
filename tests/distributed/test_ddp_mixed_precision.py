"""DDP mixed_precision and device_mesh on real ranks.

With ``_MixedPrecision(param_dtype, reduce_dtype, buffer_dtype)`` every rank computes in
``param_dtype``; the gradients are all-reduced in ``reduce_dtype`` (sum, then divide by the
world size) and land, through ``param_dtype``, as full-precision gradients on the
full-precision parameters the optimizer updates.  Each rank recomputes every rank's
low-precision gradients in one process and checks the result bit for bit against that
hand-computed reduction, and that the ranks stay in sync."""
import pytest

from dist_helpers import run_ranks

pytestmark = pytest.mark.slow

WORKER = r'''
import copy, numpy as np, ember, ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.nn.parallel.distributed import _MixedPrecision
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()

def model():
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(6, 16), ember.nn.Tanh(), ember.nn.Linear(16, 3))
    m.register_buffer("scale", ember.full((3,), 0.5))
    m.register_buffer("count", ember.zeros((), dtype=ember.int64))
    return m

def data(k, step):
    g = np.random.default_rng(1000 * step + k)
    return (ember.tensor(g.standard_normal((4, 6)).astype(np.float32)),
            ember.tensor(g.standard_normal((4, 3)).astype(np.float32)))

def loss_fn(m, x, y, run=None):
    return (((run or m)(x) * m.scale.to(x.dtype) - y.to(x.dtype)) ** 2).mean()

def low_grads(full_params, low, k, step):
    """Rank k's gradients computed in ``low`` precision, as NumPy arrays."""
    ref = model().to(low)
    with ember.no_grad():
        for q, p in zip(ref.parameters(), full_params):
            q.copy_(p.to(low))
    x, y = data(k, step)
    loss_fn(ref, x.to(low), y).backward()
    return [q.grad.numpy() for q in ref.parameters()]

for param_dtype, reduce_dtype in ((ember.float16, None), (ember.float16, ember.float32),
                                  (ember.bfloat16, ember.float32), (None, ember.float16)):
    mp = _MixedPrecision(param_dtype=param_dtype, reduce_dtype=reduce_dtype,
                         buffer_dtype=ember.float16)
    net = model()
    ddp = DDP(net, mixed_precision=mp)
    assert net.scale.dtype == ember.float16 and net.count.dtype == ember.int64
    opt = ember.optim.SGD(ddp.parameters(), lr=0.1)
    low = param_dtype or ember.float32
    red = (reduce_dtype or low).np
    for step in range(3):
        before = [p.detach().clone() for p in net.parameters()]
        opt.zero_grad()
        x, y = data(r, step)
        out = ddp(x)
        assert out.dtype == low, out.dtype
        ((out * net.scale.to(low) - y.to(low)) ** 2).mean().backward()
        per_rank = [low_grads(before, low, k, step) for k in range(n)]
        for i, p in enumerate(net.parameters()):
            assert p.dtype == ember.float32 and p.grad.dtype == ember.float32
            total = sum(g[i].astype(red).astype(np.float32) for g in per_rank).astype(red)
            want = (total / red.type(n)).astype(red).astype(low.np).astype(np.float32)
            assert np.array_equal(p.grad.numpy(), want), (param_dtype, reduce_dtype, step, i,
                                                          np.abs(p.grad.numpy() - want).max())
            assert np.array_equal(p.detach().numpy(), before[i].numpy())
        opt.step()
        for p, b, in zip(net.parameters(), before):
            assert np.allclose(p.detach().numpy(), b.numpy() - 0.1 * p.grad.numpy(), atol=1e-7)
        # the replicas stay identical
        flat = ember.cat([p.detach().reshape(-1) for p in net.parameters()])
        got = [ember.empty_like(flat) for _ in range(n)]
        dist.all_gather(got, flat)
        assert all(np.array_equal(g.numpy(), flat.numpy()) for g in got)
    # a forward without grad leaves the parameters in full precision
    with ember.no_grad():
        assert ddp(data(r, 9)[0]).dtype == low
    assert all(p.dtype == ember.float32 for p in net.parameters())

# device_mesh: a 1-D mesh's group is DDP's group; the result equals process_group's
from ember.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (n,), mesh_dim_names=("dp",))
a, b = model(), model()
da, db = DDP(a, device_mesh=mesh), DDP(b, process_group=dist.group.WORLD)
assert da.process_group is dist.group.WORLD and da.device_mesh is mesh
x, y = data(r, 0)
loss_fn(a, x, y, da).backward()
loss_fn(b, x, y, db).backward()
for p, q in zip(a.parameters(), b.parameters()):
    assert np.array_equal(p.grad.numpy(), q.grad.numpy())
for bad, exc in ((lambda: DDP(model(), process_group=dist.group.WORLD, device_mesh=mesh),
                  RuntimeError),
                 (lambda: DDP(model(), mixed_precision={"param_dtype": ember.float16}),
                  TypeError)):
    try:
        bad()
        raise SystemExit("no error")
    except exc:
        pass
if n == 4:
    mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    try:
        DDP(model(), device_mesh=mesh2)
        raise SystemExit("no error for a 2-D mesh")
    except RuntimeError as e:
        assert "1D" in str(e)
    m = model()
    d = DDP(m, device_mesh=mesh2["dp"])
    x, y = data(r % 2, 0)
    loss_fn(m, x, y, d).backward()
print(f"RANK{r} OK", flush=True)
dist.destroy_process_group()
'''


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ddp_mixed_precision_and_device_mesh(n):
    rc, out = run_ranks(WORKER, n, timeout=240)
    assert rc == 0, out[-4000:]
    for r in range(n):
        assert f"RANK{r} OK" in out, out[-4000:]
