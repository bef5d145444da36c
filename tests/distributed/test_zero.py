"""ZeroRedundancyOptimizer on 2 real ranks: equals unsharded Adam, holds about half of Adam's
state per rank, consolidates and reloads its state at another world size.  Also the rank
program: ``python test_zero.py CASE``."""
import copy
import io
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_ddp import NPROC, launch  # noqa: E402

HERE = os.path.abspath(__file__)


def _model(torch):
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))


def _batches(torch, steps, n=8):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(n, 10, generator=g), torch.randn(n, 4, generator=g))
            for _ in range(steps)]


def _step(torch, model, opt, x, y):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()


def _state_bytes(opt):
    return sum(v.numel() * v.element_size() for st in opt.state.values()
               for k, v in st.items() if hasattr(v, "numel") and k != "step")


def _close(a, b, what, atol=1e-6):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        if not np.allclose(p.detach().numpy(), q.detach().numpy(), atol=atol):
            raise AssertionError(f"{what}: {name} differs")


def case_adam():
    import ember as torch
    import ember.distributed as dist
    from ember.distributed.optim import ZeroRedundancyOptimizer as ZeRO
    from ember.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    data = _batches(torch, 6)
    for bucket_view in (False, True):
        ref = _model(torch)
        ropt = torch.optim.Adam(ref.parameters(), lr=0.01, weight_decay=0.01)
        model = _model(torch)
        ddp = DDP(model)
        opt = ZeRO(ddp.parameters(), torch.optim.Adam, parameters_as_bucket_view=bucket_view,
                   lr=0.01, weight_decay=0.01)
        assert opt.param_groups[0]["betas"] == (0.9, 0.999)  # the local optimizer's defaults
        for x, y in data[:4]:
            _step(torch, ddp, opt, x, y)  # same full batch on both ranks: DDP mean = Adam's
            _step(torch, ref, ropt, x, y)
        _close(model, ref, f"ZeRO vs Adam (bucket view {bucket_view})")
        # each rank holds the state of its partition only: about half of Adam's
        mine = _state_bytes(opt.optim)
        full = _state_bytes(ropt)
        assert 0.3 * full < mine < 0.7 * full, (mine, full)
        t = torch.tensor([float(mine)])
        dist.all_reduce(t)
        assert t.item() == full
        own = {id(p) for g in opt.optim.param_groups for p in g["params"]}
        assert len(own) < len(list(model.parameters()))

    # the learning rate set on the wrapper reaches the local optimizer
    for g in opt.param_groups:
        g["lr"] = 0.005
    for g in ropt.param_groups:
        g["lr"] = 0.005
    _step(torch, ddp, opt, *data[4])
    _step(torch, ref, ropt, *data[4])
    _close(model, ref, "after lr change")

    # consolidated state dict == Adam's; saved at world 2, it loads at world 1
    with pytest_raises(RuntimeError, "consolidate_state_dict"):
        opt.state_dict()
    opt.consolidate_state_dict(to=0)
    buf = io.BytesIO()
    if rank == 0:
        sd = opt.state_dict()
        rsd = ropt.state_dict()
        assert sd["param_groups"] == rsd["param_groups"]
        assert sorted(sd["state"]) == sorted(rsd["state"])
        for i in rsd["state"]:
            for k in ("exp_avg", "exp_avg_sq", "step"):
                assert np.allclose(sd["state"][i][k].numpy(), rsd["state"][i][k].numpy())
        torch.save(sd, buf)
    else:
        with pytest_raises(RuntimeError, "consolidate_state_dict"):
            opt.state_dict()
    solo = dist.new_group([0])
    if rank == 0:
        buf.seek(0)
        sd = torch.load(buf, weights_only=True)
        m1 = _model(torch)
        m1.load_state_dict(model.state_dict())
        o1 = ZeRO(m1.parameters(), torch.optim.Adam, process_group=solo, lr=0.3)
        o1.load_state_dict(sd)
        assert o1.param_groups[0]["lr"] == 0.005
        assert _state_bytes(o1.optim) == _state_bytes(ropt)  # world 1: everything here
        _step(torch, m1, o1, *data[5])
        r1 = _model(torch)
        r1.load_state_dict(ref.state_dict())
        ro = torch.optim.Adam(r1.parameters(), lr=0.01)
        ro.load_state_dict(copy.deepcopy(ropt.state_dict()))  # ro must not share ropt's state
        _step(torch, r1, ro, *data[5])
        _close(m1, r1, "state dict loaded at world size 1")

    # plain Adam's state dict (world 1) loads into ZeRO at world 2 and continues the same
    rsd = ropt.state_dict()
    opt2 = ZeRO(ddp.parameters(), torch.optim.Adam, lr=0.5)
    opt2.load_state_dict(rsd)
    _step(torch, ddp, opt2, *data[5])
    _step(torch, ref, ropt, *data[5])
    _close(model, ref, "Adam state dict loaded at world size 2")

    # add_param_group: the new group is partitioned too and stepped like Adam's
    extra = torch.nn.Parameter(torch.ones(64))
    rextra = torch.nn.Parameter(torch.ones(64))
    opt2.add_param_group({"params": [extra], "lr": 0.1})
    ropt.add_param_group({"params": [rextra], "lr": 0.1})
    assert len(opt2.param_groups) == 2
    for _ in range(2):
        extra.grad = torch.full((64,), 0.5)
        rextra.grad = torch.full((64,), 0.5)
        opt2.step()
        ropt.step()
    assert np.allclose(extra.detach().numpy(), rextra.detach().numpy(), atol=1e-6)
    print(f"rank {rank} ok")
    dist.destroy_process_group()


class pytest_raises:
    """pytest.raises for the rank program (which has no pytest context)."""

    def __init__(self, exc, match):
        self.exc, self.match = exc, match

    def __enter__(self):
        return self

    def __exit__(self, typ, val, tb):
        if typ is None:
            raise AssertionError(f"{self.exc.__name__} not raised")
        if not issubclass(typ, self.exc) or self.match not in str(val):
            return False
        return True


@pytest.mark.slow
def test_zero_two_ranks():
    out = launch(HERE, "adam")
    assert out.count(" ok") == NPROC, out


if __name__ == "__main__":
    globals()[f"case_{sys.argv[1]}"]()
