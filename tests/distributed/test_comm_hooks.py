"""DDP communication hooks on 2 real ranks: every hook keeps the replicas identical and the
loss falling; allreduce_hook equals built-in DDP; PowerSGD's error feedback is checked by
hand on a small matrix; PowerSGD state survives a checkpoint.  Also the rank program:
``python test_comm_hooks.py CASE``."""
import io
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_ddp import NPROC, launch  # noqa: E402

HERE = os.path.abspath(__file__)


def _setup():
    import ember.distributed as dist
    dist.init_process_group("gloo")
    return dist, dist.get_rank(), dist.get_world_size()


def _model(torch):
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(),
                         nn.Linear(24, 2))


def _train(torch, dist, rank, hook=None, state=None, steps=12, ddp_kwargs=None, start=None):
    from ember.nn.parallel import DistributedDataParallel as DDP
    model = _model(torch)
    ddp = DDP(model, bucket_cap_mb=0.004, **(ddp_kwargs or {}))
    if hook is not None:
        ddp.register_comm_hook(state, hook)
    if start is not None:
        model.load_state_dict(start)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.2)
    g = torch.Generator().manual_seed(7 + rank)  # each rank has its own data
    w_true = torch.randn(8, 2, generator=torch.Generator().manual_seed(3))
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 8, generator=g)
        y = x @ w_true
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def _same_on_all_ranks(torch, dist, model, what):
    for name, p in model.named_parameters():
        mine = p.detach().clone()
        ref = mine.clone()
        dist.broadcast(ref, src=0)
        if not torch.equal(mine, ref):
            raise AssertionError(f"{what}: {name} differs between ranks")


def _global_mean(torch, dist, values):
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return (t / dist.get_world_size()).tolist()


def case_hooks():
    import ember as torch
    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks as dh
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
    dist, rank, world = _setup()
    base, base_losses = _train(torch, dist, rank)
    hooks = {
        "allreduce": (dh.allreduce_hook, None),
        "fp16": (dh.fp16_compress_hook, None),
        "bf16": (dh.bf16_compress_hook, None),
        "fp16_wrapper": (dh.fp16_compress_wrapper(dh.allreduce_hook), None),
        "bf16_wrapper": (dh.bf16_compress_wrapper(dh.allreduce_hook), None),
        "powerSGD": (ps.powerSGD_hook, lambda: ps.PowerSGDState(
            None, matrix_approximation_rank=2, start_powerSGD_iter=3, min_compression_rate=1)),
        "powerSGD_batched_same_shape": (ps.powerSGD_hook, lambda: ps.PowerSGDState(
            None, matrix_approximation_rank=1, start_powerSGD_iter=2, min_compression_rate=1,
            batch_tensors_with_same_shape=True, warm_start=False, use_error_feedback=False)),
        "batched_powerSGD": (ps.batched_powerSGD_hook, lambda: ps.PowerSGDState(
            None, matrix_approximation_rank=4, start_powerSGD_iter=3)),
        "fp16_powerSGD": (dh.fp16_compress_wrapper(ps.powerSGD_hook), lambda: ps.PowerSGDState(
            None, matrix_approximation_rank=3, start_powerSGD_iter=2, min_compression_rate=1)),
    }
    for name, (hook, make_state) in hooks.items():
        state = make_state() if make_state else None
        model, losses = _train(torch, dist, rank, hook, state)
        _same_on_all_ranks(torch, dist, model, name)
        mean = _global_mean(torch, dist, losses)
        if not mean[-1] < 0.5 * mean[0]:
            raise AssertionError(f"{name}: loss did not fall: {mean}")
        if name == "allreduce":
            for p, q in zip(model.parameters(), base.parameters()):
                assert np.allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-6), name
        if name in ("fp16", "fp16_wrapper", "bf16", "bf16_wrapper"):
            tol = 2e-3 if name.startswith("fp16") else 2e-2
            for p, q in zip(model.parameters(), base.parameters()):
                assert np.allclose(p.detach().numpy(), q.detach().numpy(), atol=tol), name
        if state is not None:
            assert state.iter == 12, (name, state.iter)
            rate = state.compression_stats()[0]
            assert rate > 1, (name, rate)
    print(f"rank {rank} ok")
    dist.destroy_process_group()


def _fake_bucket(torch, arrays, is_last=True, index=0):
    from ember.nn.parallel._reducer import GradBucket
    flat = torch.tensor(np.concatenate([a.ravel() for a in arrays]))
    shapes = [a.shape for a in arrays]
    offsets = list(np.cumsum([0] + [a.size for a in arrays[:-1]]))
    params = [torch.nn.Parameter(torch.zeros(*s)) for s in shapes]
    return GradBucket(index, flat, offsets, shapes, params, is_last)


def case_powersgd_by_hand():
    """One rank-1 PowerSGD step on 3x2 matrices, computed by hand with NumPy."""
    import ember as torch
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
    dist, rank, world = _setup()
    mats = [np.array([[3.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
            np.array([[1.0, 2.0], [0.0, -1.0], [2.0, 0.0]])]
    bias = [np.array([1.0, 2.0]), np.array([3.0, 6.0])]
    m = mats[rank]
    # rate 1: the 3x2 matrices are compressed ((3+2)*1 < 6), the 2-vector is not
    state = ps.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2,
                             min_compression_rate=1)
    state.iter = 2
    q0 = np.array([[1.0], [1.0]]) / np.sqrt(2)
    # warm start from a known Q: P memory of 3 values, Q memory of 2 values
    state.p_memory_dict[0] = torch.zeros(3, dtype=torch.float64)
    state.q_memory_dict[0] = torch.tensor(q0.ravel())
    bucket = _fake_bucket(torch, [m, bias[rank]])
    out = ps.powerSGD_hook(state, bucket).wait()

    p = sum(mt @ q0 for mt in mats)                      # all-reduced P = sum_r M_r Q
    p = p / np.linalg.norm(p)
    q = sum(mt.T @ p for mt in mats) / world             # averaged Q = mean_r M_r^T P
    approx = p @ q.T
    expect_bias = sum(bias) / world                      # the 1-D bias is sent uncompressed
    got = out.numpy()
    assert np.allclose(got[:6].reshape(3, 2), approx), (got, approx)
    assert np.allclose(got[6:], expect_bias)
    err = state.error_dict[0].numpy()
    assert np.allclose(err[:6].reshape(3, 2), m - approx)  # error feedback: input - output
    assert np.allclose(err[6:], bias[rank] - expect_bias)
    assert state.iter == 3

    # next step: the kept error is added to the new gradient before compressing
    g2 = np.full((3, 2), 0.5)
    bucket = _fake_bucket(torch, [g2, np.zeros(2)])
    out2 = ps.powerSGD_hook(state, bucket).wait().numpy()
    inp = np.concatenate([g2.ravel(), np.zeros(2)]) + err
    assert np.allclose(out2 + state.error_dict[0].numpy(), inp)  # nothing lost locally
    q_warm = q.copy() / np.linalg.norm(q)                # warm start: last Q, orthonormalized
    m2 = inp[:6].reshape(3, 2)
    p2 = m2 @ q_warm
    tot = p2.copy()
    dist.all_reduce(t := torch.tensor(tot))
    p2 = t.numpy() / np.linalg.norm(t.numpy())
    q2 = m2.T @ p2
    dist.all_reduce(t := torch.tensor(q2))
    assert np.allclose(out2[:6].reshape(3, 2), p2 @ (t.numpy() / world).T)
    print(f"rank {rank} ok")
    dist.destroy_process_group()


def case_powersgd_checkpoint():
    """PowerSGD state saved with ember.save (weights-only load) resumes bit-identically."""
    import ember as torch
    from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
    dist, rank, world = _setup()

    def mk():
        return ps.PowerSGDState(None, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                min_compression_rate=1, random_seed=5)

    full_state = mk()
    full, _ = _train(torch, dist, rank, ps.powerSGD_hook, full_state, steps=10)

    st1 = mk()
    half, _ = _train(torch, dist, rank, ps.powerSGD_hook, st1, steps=5)
    buf = io.BytesIO()
    torch.save({"model": half.state_dict(), "hook": st1.state_dict()}, buf)
    buf.seek(0)
    ck = torch.load(buf, weights_only=True)
    st2 = mk()
    st2.load_state_dict(ck["hook"])
    assert st2.iter == 5 and set(st2.error_dict) == set(st1.error_dict)
    resumed, _ = _train2(torch, dist, rank, ps.powerSGD_hook, st2, ck["model"])
    for p, q in zip(resumed.parameters(), full.parameters()):
        assert np.allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-6)
    # pickling (torch's __getstate__/__setstate__) keeps everything but the process group
    import pickle
    st3 = pickle.loads(pickle.dumps(st1))
    assert st3.process_group is None and st3.iter == st1.iter
    print(f"rank {rank} ok")
    dist.destroy_process_group()


def _train2(torch, dist, rank, hook, state, start):
    """Steps 6-10 of `_train`'s run (same data stream), from checkpoint ``start``."""
    from ember.nn.parallel import DistributedDataParallel as DDP
    model = _model(torch)
    model.load_state_dict(start)
    ddp = DDP(model, bucket_cap_mb=0.004)
    ddp.register_comm_hook(state, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.2)
    g = torch.Generator().manual_seed(7 + rank)
    w_true = torch.randn(8, 2, generator=torch.Generator().manual_seed(3))
    for step in range(10):
        x = torch.randn(16, 8, generator=g)
        if step < 5:
            continue
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), x @ w_true).backward()
        opt.step()
    return model, None


@pytest.mark.slow
@pytest.mark.parametrize("case", ["hooks", "powersgd_by_hand", "powersgd_checkpoint"])
def test_comm_hooks_two_ranks(case):
    out = launch(HERE, case)
    assert out.count(" ok") == NPROC, out


def test_powersgd_state_validation():
    from ember.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import PowerSGDState
    with pytest.raises(ValueError, match="start_powerSGD_iter"):
        PowerSGDState(None, start_powerSGD_iter=1)
    st = PowerSGDState(None, start_powerSGD_iter=1, use_error_feedback=False, warm_start=False)
    assert st.compression_stats() == (0, 0, 0)


def test_orthogonalize_matches_qr():
    from ember.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _orthogonalize
    rng = np.random.default_rng(0)
    for r in (1, 2, 4):
        a = rng.standard_normal((3, 7, r))
        b = a.copy()
        _orthogonalize(b)
        for i in range(3):
            assert np.allclose(b[i].T @ b[i], np.eye(r), atol=1e-10)
            # the same column space as the input
            proj = b[i] @ b[i].T @ a[i]
            assert np.allclose(proj, a[i], atol=1e-10)
    z = np.zeros((1, 4, 2))
    z[0, :, 1] = 1.0
    _orthogonalize(z)  # an all-zero column stays zero instead of becoming NaN
    assert np.isfinite(z).all()


if __name__ == "__main__":
    globals()[f"case_{sys.argv[1]}"]()
