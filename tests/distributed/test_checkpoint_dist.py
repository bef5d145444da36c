"""Distributed checkpoints on real ranks: saved on 2 ranks (DTensor shards, replicated
tensors, nested non-tensor values, ZeRO optimizer shards), loaded back on 1 (a plain
process, no process group), 3 and 4 ranks with other layouts; a 2-D mesh checkpoint saved on
4 ranks loads on 2.  Values are compared with NumPy-built expectations and with plain Adam
run in one process.  Also the rank program: ``python test_checkpoint_dist.py CASE DIR``."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from dist_helpers import _env, free_port  # noqa: E402

BLOCK = 4096          # CRC block used by these tests, so byte counts are exact at small sizes
BIG = (64, 1024)      # float32 rows of exactly one block


def expected(name):
    if name == "w":
        return (np.arange(48, dtype=np.float32).reshape(8, 6) * 0.5)
    if name == "v":
        return np.linspace(-1, 1, 35).reshape(5, 7)
    if name == "r":
        return np.array([1, 2, 3], np.int64)
    if name == "big":
        return np.arange(BIG[0] * BIG[1], dtype=np.float32).reshape(BIG)
    if name == "nested":
        return np.array([[1.5, -2.0], [0.25, 4.0]], np.float32)
    if name == "m2":
        return np.arange(48, dtype=np.float64).reshape(6, 8) - 7
    if name == "m3":
        return np.arange(16, dtype=np.float32).reshape(4, 4) * 3
    raise KeyError(name)


def launch(case, nproc, ckdir, timeout=240):
    env = dict(_env(), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
    if nproc is None:
        cmd = [sys.executable, HERE, case, str(ckdir)]
    else:
        mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        cmd = [mpiexec, "-n", str(nproc), sys.executable, HERE, case, str(ckdir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"rank program failed ({proc.returncode}):\n{proc.stdout}\n" \
                                 f"{proc.stderr[-6000:]}"
    for r in range(nproc or 1):
        assert f"RANK{r} OK" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    return proc.stdout


# ---------------------------------------------------------------------------------------
# rank program
# ---------------------------------------------------------------------------------------
def _model(torch):
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(),
                         nn.Linear(8, 3))


def _train(torch, model, opt, steps=3):
    g = torch.Generator().manual_seed(5)
    for _ in range(steps):
        x, y = torch.randn(4, 6, generator=g), torch.randn(4, 3, generator=g)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def _reference_adam(torch):
    model = _model(torch)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    _train(torch, model, opt)
    return model, {n: opt.state[p] for n, p in model.named_parameters()}


def _setup():
    import ember.distributed as dist
    from ember.distributed.checkpoint import filesystem
    filesystem._CRC_BLOCK = BLOCK
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def _check_full(name, value):
    got = value.full_tensor() if hasattr(value, "full_tensor") else value
    np.testing.assert_array_equal(got.numpy(), expected(name), err_msg=name)


def _check_local(name, d):
    offsets, sizes = d._local_box()
    box = tuple(slice(o, o + s) for o, s in zip(offsets, sizes))
    np.testing.assert_array_equal(d.to_local().numpy(), expected(name)[box], err_msg=name)


def case_save2(ckdir):
    import ember as torch
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint.state_dict import get_state_dict
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.distributed.tensor import Replicate, Shard, distribute_tensor
    rank, world = _setup()
    mesh = init_device_mesh("cpu", (world,))
    model = _model(torch)
    opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.01)
    _train(torch, model, opt)
    msd, osd = get_state_dict(model, opt)
    owned = sorted(osd["state"])
    sd = {
        "w": distribute_tensor(torch.from_numpy(expected("w")), mesh, [Shard(0)]),
        "v": distribute_tensor(torch.from_numpy(expected("v")), mesh, [Shard(1)]),
        "big": distribute_tensor(torch.from_numpy(expected("big")), mesh, [Shard(0)]),
        "rep": distribute_tensor(torch.from_numpy(expected("r")), mesh, [Replicate()]),
        "r": torch.from_numpy(expected("r")),
        "extra": {"epoch": 7, "tags": ["a", ("b", 2)], "inner": {
            "t": torch.from_numpy(expected("nested"))}},
        "model": msd, "optim": osd,
    }
    md = dcp.save(sd, checkpoint_id=ckdir)
    info = md.storage_data
    from ember.distributed.checkpoint import MetadataIndex
    # each shard in its owner's file; replicated values stored exactly once
    assert info[MetadataIndex("w", (0, 0))].relative_path == "__0_0.distcp"
    assert info[MetadataIndex("w", (4, 0))].relative_path == "__1_0.distcp"
    assert info[MetadataIndex("v", (0, 4))].relative_path == "__1_0.distcp"
    assert len([k for k in info if k.fqn in ("r", "rep", "extra.epoch")]) == 3
    total = sum(i.length for i in info.values())
    on_disk = sum(os.path.getsize(os.path.join(ckdir, f)) for f in os.listdir(ckdir)
                  if f.endswith(".distcp"))
    assert total == on_disk, (total, on_disk)
    # ZeRO: every rank wrote the state of exactly the parameters it owns
    mine = {k.fqn for k, i in info.items() if i.relative_path == f"__{rank}_0.distcp"}
    for fqn in owned:
        assert f"optim.state.{fqn}.exp_avg" in mine, (rank, fqn)
    print(f"RANK{rank} OK", flush=True)


def case_load_plain(ckdir):
    """No process group: load everything, into an empty dict and into a model + Adam."""
    import ember as torch
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint import FileSystemReader, filesystem
    from ember.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    filesystem._CRC_BLOCK = BLOCK
    assert not dist.is_initialized()
    out = {}
    reader = FileSystemReader(ckdir)
    dcp.load(out, storage_reader=reader)
    for name in ("w", "v", "big", "r"):
        _check_full(name, out[name])
    _check_full("r", out["rep"])
    assert out["extra"]["epoch"] == 7 and out["extra"]["tags"] == ["a", ("b", 2)]
    _check_full("nested", out["extra"]["inner"]["t"])
    ref_model, ref_state = _reference_adam(torch)
    for n, p in ref_model.named_parameters():
        np.testing.assert_allclose(out["model"][n].numpy(), p.detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(out["optim"]["state"][n]["exp_avg_sq"].numpy(),
                                   ref_state[n]["exp_avg_sq"].numpy(), atol=1e-7)
    # a plain Adam (parameters in reverse order) restores the ZeRO-sharded state by name
    model = _model(torch)
    opt = torch.optim.Adam(list(model.parameters())[::-1], lr=0.5)
    msd, osd = get_state_dict(model, opt)
    sd = {"model": msd, "optim": osd}
    dcp.load(sd, checkpoint_id=ckdir)
    set_state_dict(model, opt, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
    assert opt.param_groups[0]["lr"] == 0.01
    params = dict(model.named_parameters())
    for n, p in ref_model.named_parameters():
        np.testing.assert_allclose(params[n].detach().numpy(), p.detach().numpy(), atol=1e-6)
        np.testing.assert_allclose(opt.state[params[n]]["exp_avg"].numpy(),
                                   ref_state[n]["exp_avg"].numpy(), atol=1e-7)
    print("RANK0 OK", flush=True)


def _read_bytes_of(reader, fqn):
    spans = [(i.relative_path, i.offset, i.offset + i.length)
             for k, i in reader.storage_data.items() if k.fqn == fqn]
    return sum(n for path, off, n in reader.read_ranges
               if any(path == p and lo <= off < hi for p, lo, hi in spans))


def case_load_n(ckdir):
    """3 or 4 ranks: other shardings of the same tensors, ZeRO on the new world size,
    reading only the needed bytes; a missing key fails on every rank, naming rank and key."""
    import ember as torch
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint import CheckpointException, FileSystemReader
    from ember.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.optim import ZeroRedundancyOptimizer
    from ember.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor
    rank, world = _setup()
    mesh = init_device_mesh("cpu", (world,))

    def empty_like(name, placements):
        return distribute_tensor(torch.zeros(expected(name).shape,
                                             dtype=getattr(torch, str(expected(name).dtype))),
                                 mesh, placements)
    model = _model(torch)
    for p in model.parameters():
        p.detach().zero_()
    opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=0.3)
    msd, osd = get_state_dict(model, opt)
    sd = {"w": empty_like("w", [Shard(1)]), "v": empty_like("v", [Shard(0)]),
          "big": empty_like("big", [Shard(0)]), "rep": empty_like("r", [Shard(0)]),
          "r": torch.zeros(3, dtype=torch.int64), "extra": {"epoch": 0},
          "model": msd, "optim": osd}
    reader = FileSystemReader(ckdir)
    dcp.load(sd, storage_reader=reader)
    for name in ("w", "v", "big"):
        assert isinstance(sd[name], DTensor)
        _check_local(name, sd[name])
    _check_local("r", sd["rep"])
    _check_full("r", sd["r"])
    assert sd["extra"]["epoch"] == 7
    # Shard(0) of BIG over `world` ranks: exactly this rank's rows were read
    rows = -(-BIG[0] // world)
    mine = min(BIG[0], (rank + 1) * rows) - min(BIG[0], rank * rows)
    assert _read_bytes_of(reader, "big") == mine * BIG[1] * 4, reader.read_ranges
    set_state_dict(model, opt, model_state_dict=sd["model"], optim_state_dict=sd["optim"])
    ref_model, ref_state = _reference_adam(torch)
    ref_params = dict(ref_model.named_parameters())
    names = {id(p): n for n, p in model.named_parameters()}
    for n, p in model.named_parameters():
        np.testing.assert_allclose(p.detach().numpy(), ref_params[n].detach().numpy(),
                                   atol=1e-6)
    assert opt.optim.state, "this rank owns parameters and must hold their state"
    for p, st in opt.optim.state.items():
        np.testing.assert_allclose(st["exp_avg"].numpy(),
                                   ref_state[names[id(p)]]["exp_avg"].numpy(), atol=1e-7)
    assert opt.param_groups[0]["lr"] == 0.01
    # a key only the last rank asks for, and is missing: every rank raises, naming it
    bad = {"w": empty_like("w", [Replicate()])}
    if rank == world - 1:
        bad["no_such_key"] = torch.zeros(2)
    try:
        dcp.load(bad, checkpoint_id=ckdir)
    except CheckpointException as e:
        assert set(e.failures) == {world - 1}, e.failures
        assert "no_such_key" in str(e) and f"rank {world - 1}" in str(e), str(e)
    else:
        raise AssertionError("missing key was not reported")
    if world == 4:
        _mesh2d_roundtrip(ckdir, rank)
    print(f"RANK{rank} OK", flush=True)


def _mesh2d_roundtrip(ckdir, rank):
    """On a 2x2 mesh: load the 1-D checkpoint into (Shard(0), Shard(1)), then save a 2-D
    checkpoint next to it for case_load2d."""
    import ember as torch
    import ember.distributed.checkpoint as dcp
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import Replicate, Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    sd = {"w": distribute_tensor(torch.zeros(8, 6), mesh, [Shard(0), Shard(1)])}
    dcp.load(sd, checkpoint_id=ckdir)
    _check_local("w", sd["w"])
    _check_full("w", sd["w"])
    out = {"m2": distribute_tensor(torch.from_numpy(expected("m2")), mesh, [Shard(0), Shard(1)]),
           "m3": distribute_tensor(torch.from_numpy(expected("m3")), mesh,
                                   [Replicate(), Shard(0)])}
    _check_local("m2", out["m2"])
    md = dcp.save(out, checkpoint_id=ckdir + "_2d")
    assert len(md.state_dict_metadata["m2"].chunks) == 4
    assert len(md.state_dict_metadata["m3"].chunks) == 2   # replicated along "dp": once


def case_load2d(ckdir):
    import ember as torch
    import ember.distributed.checkpoint as dcp
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import Shard, distribute_tensor
    rank, world = _setup()
    mesh = init_device_mesh("cpu", (world,))
    sd = {"m2": distribute_tensor(torch.zeros(6, 8, dtype=torch.float64), mesh, [Shard(1)]),
          "m3": distribute_tensor(torch.zeros(4, 4), mesh, [Shard(0)])}
    dcp.load(sd, checkpoint_id=ckdir + "_2d")
    _check_local("m2", sd["m2"])
    _check_local("m3", sd["m3"])
    if rank == 0:
        plain = {}
        dcp.load(plain, checkpoint_id=ckdir + "_2d", no_dist=True)
        _check_full("m2", plain["m2"])
        _check_full("m3", plain["m3"])
    print(f"RANK{rank} OK", flush=True)


# ---------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    ckdir = str(tmp_path_factory.mktemp("dcp") / "ckpt")
    launch("save2", 2, ckdir)
    return ckdir


@pytest.mark.slow
def test_save_on_two_ranks_writes_each_shard_once(saved):
    assert sorted(f for f in os.listdir(saved) if not f.startswith(".")) == [
        "__0_0.distcp", "__1_0.distcp"]
    assert os.path.exists(os.path.join(saved, ".metadata"))


@pytest.mark.slow
def test_load_in_plain_process(saved):
    launch("load_plain", None, saved)


@pytest.mark.slow
def test_load_on_three_ranks(saved):
    launch("load_n", 3, saved)


@pytest.mark.slow
def test_load_on_four_ranks_and_2d_mesh(saved):
    launch("load_n", 4, saved, timeout=400)
    launch("load2d", 2, saved)


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](sys.argv[2])
