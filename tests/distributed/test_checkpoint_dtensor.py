"""DeviceMesh-laid-out DTensors (the sharded tensors of distributed checkpoints) on 4 real
ranks, compared with torch.chunk-style NumPy slicing: distribute_tensor, from_local,
to_local, full_tensor and redistribute on 1-D and 2-D meshes, Partial sums; and async_save
with training collectives running beside it.  Also the rank program:
``python test_checkpoint_dtensor.py``."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from dist_helpers import _env, free_port  # noqa: E402


def _chunks(n, k):
    """torch.chunk's pieces of n elements over k ranks: (start, length) per rank."""
    step = -(-n // k)
    return [(min(i * step, n), max(0, min(n, (i + 1) * step) - min(i * step, n)))
            for i in range(k)]


def main(ckdir):
    import ember
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import (DTensor, Partial, Replicate, Shard,
                                          distribute_tensor)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 4
    full = np.arange(7 * 5, dtype=np.float32).reshape(7, 5)
    # rank 0's value is the one distributed (src_data_rank=0), whatever the others pass
    mine = ember.from_numpy(full if rank == 0 else np.zeros_like(full))

    mesh = init_device_mesh("cpu", (4,))
    d = distribute_tensor(mine, mesh, [Shard(0)])
    start, length = _chunks(7, 4)[rank]
    np.testing.assert_array_equal(d.to_local().numpy(), full[start:start + length])
    assert tuple(d.shape) == (7, 5) and d.placements == (Shard(0),)
    np.testing.assert_array_equal(d.full_tensor().numpy(), full)
    r = d.redistribute(mesh, [Shard(1)])
    s1, l1 = _chunks(5, 4)[rank]
    np.testing.assert_array_equal(r.to_local().numpy(), full[:, s1:s1 + l1])
    np.testing.assert_array_equal(d.redistribute(mesh, [Replicate()]).to_local().numpy(), full)

    # 2-D mesh: rows over "dp", then the row block's columns over "tp"
    mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp, tp = mesh2.get_coordinate()
    d2 = distribute_tensor(mine, mesh2, [Shard(0), Shard(1)])
    rs, rl = _chunks(7, 2)[dp]
    cs, cl = _chunks(5, 2)[tp]
    np.testing.assert_array_equal(d2.to_local().numpy(), full[rs:rs + rl, cs:cs + cl])
    np.testing.assert_array_equal(d2.full_tensor().numpy(), full)
    # both mesh dimensions sharding dim 0: "dp" splits first, "tp" splits each part
    d00 = distribute_tensor(mine, mesh2, [Shard(0), Shard(0)])
    ss, sl = _chunks(rl, 2)[tp]
    np.testing.assert_array_equal(d00.to_local().numpy(), full[rs + ss:rs + ss + sl])
    np.testing.assert_array_equal(d00.full_tensor().numpy(), full)
    rep = d2.redistribute(mesh2, [Replicate(), Shard(0)])
    ts, tl = _chunks(7, 2)[tp]
    np.testing.assert_array_equal(rep.to_local().numpy(), full[ts:ts + tl])

    # from_local: uneven pieces with an explicit shape, and Partial summed on demand
    piece = ember.full((2 if rank < 3 else 1, 3), float(rank))
    fl = DTensor.from_local(piece, mesh, [Shard(0)], shape=(7, 3))
    want = np.concatenate([np.full((2 if r < 3 else 1, 3), float(r)) for r in range(4)])
    np.testing.assert_array_equal(fl.full_tensor().numpy(), want)
    checked = DTensor.from_local(piece, mesh, [Shard(0)], run_check=True)
    assert tuple(checked.shape) == (7, 3)
    part = DTensor.from_local(ember.full((2, 2), float(rank + 1)), mesh, [Partial()])
    np.testing.assert_array_equal(part.full_tensor().numpy(), np.full((2, 2), 10.0))
    # torch's errors: no placements, a new Partial, another mesh (torch cannot move
    # between meshes either)
    for args, exc, msg in [((mesh, None), RuntimeError, "placements is needed"),
                           ((mesh, [Partial()]), RuntimeError, "to Partial is for internal"),
                           ((mesh2, [Replicate(), Replicate()]), NotImplementedError,
                            "Cross device mesh comm not supported yet!")]:
        try:
            d.redistribute(*args)
        except exc as e:
            assert msg in str(e), str(e)
        else:
            raise AssertionError(f"redistribute{args} did not raise")
    back = part.redistribute(mesh, [Partial()])
    assert back is part
    try:
        DTensor.from_local(ember.zeros(3, 3), mesh, [Shard(0)], shape=(7, 3))
    except ValueError as e:
        assert "give this rank (1, 3)" in str(e) or "give this rank (2, 3)" in str(e)
    else:
        raise AssertionError("a wrong local shape was accepted")

    # factories: the same global tensor on every rank, each keeping its piece
    import ember.distributed.tensor as dt
    o = dt.ones(7, 5, device_mesh=mesh2, placements=[Shard(0), Shard(1)])
    np.testing.assert_array_equal(o.full_tensor().numpy(), np.ones((7, 5), np.float32))
    f = dt.full((4, 2), 2.5, device_mesh=mesh, placements=[Shard(0)])
    np.testing.assert_array_equal(f.to_local().numpy(), np.full((1, 2), 2.5))
    ember.manual_seed(rank)                      # different generators on every rank
    rn = dt.randn(8, 3, device_mesh=mesh, placements=[Shard(0)])
    got = rn.full_tensor()
    same = [None] * 4
    dist.all_gather_object(same, got)
    assert all(np.array_equal(g.numpy(), got.numpy()) for g in same)
    assert got.numpy().std() > 0.1
    z = dt.zeros((3, 4), device_mesh=mesh, placements=[Replicate()], requires_grad=True)
    assert z.requires_grad and z.to_local().abs().sum().item() == 0
    # a Partial DTensor must be reduced before it is saved
    try:
        dcp.save({"p": part}, checkpoint_id=ckdir + "_partial")
    except dcp.CheckpointException as e:
        assert "Partial" in str(e) and "'p'" in str(e)
    else:
        raise AssertionError("a Partial DTensor was saved")

    # async_save: the main thread keeps running collectives while the save writes
    sd = {"w": d2, "step": 3}
    fut = dcp.async_save(sd, checkpoint_id=ckdir)
    t = ember.ones(1000)
    for _ in range(20):
        dist.all_reduce(t)
    d2.to_local().add_(1000)                     # the staged copy is what gets saved
    md = fut.result(timeout=120)
    assert len(md.state_dict_metadata["w"].chunks) == 4
    np.testing.assert_array_equal(t.numpy(), np.full(1000, 4.0 ** 20))
    out = {"w": distribute_tensor(ember.zeros(7, 5), mesh, [Shard(1)]), "step": 0}
    dcp.load(out, checkpoint_id=ckdir)
    np.testing.assert_array_equal(out["w"].to_local().numpy(), full[:, s1:s1 + l1])
    assert out["step"] == 3
    print(f"RANK{rank} OK", flush=True)


@pytest.mark.slow
def test_dtensor_and_async_save_on_four_ranks(tmp_path):
    env = dict(_env(), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    proc = subprocess.run([mpiexec, "-n", "4", sys.executable, HERE, str(tmp_path / "ck")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"rank program failed ({proc.returncode}):\n{proc.stdout}\n" \
                                 f"{proc.stderr[-6000:]}"
    for r in range(4):
        assert f"RANK{r} OK" in proc.stdout, proc.stdout + proc.stderr[-3000:]


if __name__ == "__main__":
    main(sys.argv[1])
