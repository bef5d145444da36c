"""SyncBatchNorm: on 2 real ranks forward, backward and running statistics equal BatchNorm on
the concatenated batch; in one process it is BatchNorm (checked against torch).  Also the
rank program: ``python test_syncbn.py CASE``."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_ddp import NPROC, launch  # noqa: E402

HERE = os.path.abspath(__file__)


def case_stats():
    import ember as torch
    import ember.distributed as dist
    from ember.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    nn = torch.nn
    g = torch.Generator().manual_seed(0)
    sizes = [3, 5]  # uneven local batches
    full = torch.randn(sum(sizes), 4, 3, 3, generator=g) * 2 + 1
    wgt = torch.randn(sum(sizes), 4, 3, 3, generator=g)
    lo = sum(sizes[:rank])
    sl = slice(lo, lo + sizes[rank])

    for kwargs in ({}, {"affine": False}, {"momentum": None}):
        ref = nn.BatchNorm2d(4, **kwargs)
        sbn = nn.SyncBatchNorm(4, **kwargs)
        if kwargs.get("affine", True):
            with torch.no_grad():
                for m in (ref, sbn):
                    m.weight.copy_(torch.tensor([1.0, 2.0, 0.5, -1.0]))
                    m.bias.copy_(torch.tensor([0.0, 1.0, -1.0, 0.5]))
        for _ in range(2):
            x_ref = full.clone().requires_grad_()
            out_ref = ref(x_ref)
            (out_ref * wgt).sum().backward()
            x = full[sl].clone().requires_grad_()
            out = sbn(x)
            (out * wgt[sl]).sum().backward()
            assert np.allclose(out.detach().numpy(), out_ref[sl].detach().numpy(), atol=1e-5)
            assert np.allclose(x.grad.numpy(), x_ref.grad[sl].numpy(), atol=1e-5), kwargs
        assert np.allclose(sbn.running_mean.numpy(), ref.running_mean.numpy(), atol=1e-6)
        assert np.allclose(sbn.running_var.numpy(), ref.running_var.numpy(), atol=1e-5)
        if kwargs.get("affine", True):
            # parameter gradients are local: summed over ranks they equal the full batch's
            for p, q in ((sbn.weight, ref.weight), (sbn.bias, ref.bias)):
                t = p.grad.clone()
                dist.all_reduce(t)
                assert np.allclose(t.numpy(), q.grad.numpy(), atol=1e-4)
        sbn.eval()
        ref.eval()
        assert np.allclose(sbn(full[sl]).detach().numpy(), ref(full[sl]).detach().numpy(),
                           atol=1e-5)

    # a converted model under DDP trains like the BatchNorm model on the whole batch
    def net():
        torch.manual_seed(1)
        return nn.Sequential(nn.Conv2d(4, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                             nn.Flatten(), nn.Linear(54, 2))

    ref = net()
    ddp = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(net()))
    assert isinstance(ddp.module[1], nn.SyncBatchNorm)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    ropt = torch.optim.SGD(ref.parameters(), lr=0.01)
    y = torch.randn(sum(sizes), 2, generator=g)
    for _ in range(3):
        opt.zero_grad()
        # the sum loss makes DDP's average equal the full batch's gradient / world
        (((ddp(full[sl]) - y[sl]) ** 2).sum() * world).backward()
        opt.step()
        ropt.zero_grad()
        ((ref(full) - y) ** 2).sum().backward()
        ropt.step()
    for (name, p), q in zip(ddp.module.named_parameters(), ref.parameters()):
        assert np.allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-4), name
    assert np.allclose(ddp.module[1].running_var.numpy(), ref[1].running_var.numpy(), atol=1e-5)
    print(f"rank {rank} ok")
    dist.destroy_process_group()


@pytest.mark.slow
def test_syncbn_two_ranks():
    out = launch(HERE, "stats")
    assert out.count(" ok") == NPROC, out


def test_syncbn_single_process_is_batchnorm_like_torch():
    import ember as torch
    import torch as ref_torch
    x = np.random.default_rng(0).standard_normal((6, 3, 4)).astype(np.float32)
    ours = torch.nn.SyncBatchNorm(3, momentum=0.3)
    theirs = ref_torch.nn.SyncBatchNorm(3, momentum=0.3)
    for train in (True, True, False):
        ours.train(train)
        theirs.train(train)
        a = torch.tensor(x, requires_grad=True)
        b = ref_torch.tensor(x, requires_grad=True)
        oa, ob = ours(a), theirs(b)
        assert np.allclose(oa.detach().numpy(), ob.detach().numpy(), atol=1e-5)
        (oa * oa).sum().backward()
        (ob * ob).sum().backward()
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-4)
        assert np.allclose(ours.running_var.numpy(), theirs.running_var.numpy(), atol=1e-6)
    assert int(ours.num_batches_tracked) == 2


def test_syncbn_input_checks():
    import ember as torch
    bn = torch.nn.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        bn(torch.zeros(3))
    with pytest.raises(ValueError, match="channels should be non-zero"):
        torch.nn.SyncBatchNorm(0)(torch.zeros(2, 0))


def test_convert_sync_batchnorm_shares_state():
    import ember as torch
    nn = torch.nn
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                      nn.Sequential(nn.BatchNorm1d(5, affine=False)))
    m[1].eval()
    w, rm = m[1].weight, m[1].running_mean
    c = nn.SyncBatchNorm.convert_sync_batchnorm(m, process_group="pg")
    assert c is m and isinstance(c[1], nn.SyncBatchNorm) and isinstance(c[2][0], nn.SyncBatchNorm)
    assert c[1].weight is w and c[1].running_mean is rm and not c[1].training
    assert c[1].process_group == "pg" and c[2][0].weight is None and c[2][0].affine is False
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2))
    assert type(single) is nn.SyncBatchNorm


if __name__ == "__main__":
    globals()[f"case_{sys.argv[1]}"]()
