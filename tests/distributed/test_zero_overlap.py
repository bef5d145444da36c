"""ZeroRedundancyOptimizer(overlap_with_ddp=True) with the ZeRO DDP hooks on 2 and 3 real
ranks: after the warm-up iterations (two, three with static_graph, which update nothing) the
parameters equal plain DDP + Adam at every step, each rank holds only its buckets' state,
and the consolidated state equals Adam's."""
import pytest

from dist_helpers import run_ranks

pytestmark = pytest.mark.slow

WORKER = r'''
import logging, numpy as np, ember, ember.distributed as dist
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.distributed.optim import ZeroRedundancyOptimizer as ZeRO
from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from ember.distributed.algorithms.ddp_comm_hooks.ddp_zero_hook import (
    hook_with_zero_step, hook_with_zero_step_interleaved)
logging.getLogger("ember.distributed.optim.zero_redundancy_optimizer").setLevel(logging.ERROR)
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()

def model():
    ember.manual_seed(0)
    nn = ember.nn
    return nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh(),
                         nn.Linear(12, 8), nn.Tanh(), nn.Linear(8, 2))

def data(step):
    g = np.random.default_rng(100 * step + r)
    return (ember.tensor(g.standard_normal((6, 5)).astype(np.float32)),
            ember.tensor(g.standard_normal((6, 2)).astype(np.float32)))

def flat(m):
    return np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])

for make_hook in (hook_with_zero_step, hook_with_zero_step_interleaved):
    for static in (False, True):
        warm = 3 if static else 2
        a, b = model(), model()
        # a tiny bucket cap: one bucket per parameter, spread over the ranks
        da = DDP(a, bucket_cap_mb=1e-4, static_graph=static)
        db = DDP(b, bucket_cap_mb=1e-4, static_graph=static)
        zero = ZeRO(da.parameters(), ember.optim.Adam, overlap_with_ddp=True, lr=0.01,
                    weight_decay=0.01)
        adam = ember.optim.Adam(db.parameters(), lr=0.01, weight_decay=0.01)
        try:
            zero.consolidate_state_dict()
            raise SystemExit("consolidate before the warm-up ended")
        except RuntimeError:
            pass
        da.register_comm_hook(None, make_hook(allreduce_hook, da, zero))
        assert len(da.reducer.buckets) >= 4, len(da.reducer.buckets)
        start = flat(a)
        for it in range(7):
            x, y = data(it)
            zero.zero_grad()
            adam.zero_grad()
            ember.nn.functional.mse_loss(da(x), y).backward()
            ember.nn.functional.mse_loss(db(x), y).backward()
            assert zero.step() is None            # the step ran in the hook
            if it >= warm:
                adam.step()
            else:
                assert np.array_equal(flat(a), start), "a warm-up iteration updated"
            for p, q in zip(a.parameters(), b.parameters()):
                assert np.array_equal(p.grad.numpy(), q.grad.numpy())
            assert np.allclose(flat(a), flat(b), atol=1e-7, rtol=0), \
                (make_hook.__name__, static, it, np.abs(flat(a) - flat(b)).max())
            got = [ember.empty(flat(a).size) for _ in range(n)]
            dist.all_gather(got, ember.tensor(flat(a)))
            assert all(np.array_equal(g.numpy(), flat(a)) for g in got), "ranks differ"
        assert not np.array_equal(flat(a), start)
        # each rank keeps the Adam state of its own buckets (bucket i on rank i % n)
        own = {id(p) for g in zero.optim.param_groups for p in g["params"]}
        want = {id(p) for i, bk in enumerate(da.reducer.buckets) if i % n == r
                for p in bk.params}
        assert own == want
        mine = sum(st["exp_avg"].numel() for st in zero.optim.state.values())
        t = ember.tensor([float(mine)])
        dist.all_reduce(t)
        assert t.item() == sum(p.numel() for p in a.parameters())
        zero.consolidate_state_dict(to=0)
        if r == 0:
            sd, ref = zero.state_dict(), adam.state_dict()
            assert sorted(sd["state"]) == sorted(ref["state"])
            for k in ref["state"]:
                for key in ("exp_avg", "exp_avg_sq", "step"):
                    assert np.allclose(np.asarray(sd["state"][k][key]),
                                       np.asarray(ref["state"][k][key]), atol=1e-7), (k, key)
try:
    hook_with_zero_step(allreduce_hook, DDP(model()), ZeRO(model().parameters(),
                                                            ember.optim.Adam, lr=0.1))
    raise SystemExit("no error for a ZeRO without overlap_with_ddp")
except ValueError as e:
    assert "overlap_with_ddp" in str(e)
print(f"RANK{r} OK", flush=True)
dist.destroy_process_group()
'''


@pytest.mark.parametrize("n", [2, 3])
def test_zero_overlap_equals_ddp_adam(n):
    rc, out = run_ranks(WORKER, n, timeout=300)
    assert rc == 0, out[-4000:]
    for r in range(n):
        assert f"RANK{r} OK" in out, out[-4000:]
