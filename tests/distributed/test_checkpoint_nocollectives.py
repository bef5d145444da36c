"""``save(use_collectives=False)`` on real ranks: each of 2 ranks plans and writes alone (its
own data file and its own ``__<rank>.metadata`` piece, no global index), and the reader
merges the pieces, so the checkpoint loads on 1 (a plain process) and 3 ranks with other
layouts.  A later save on fewer ranks drops the extra ranks' pieces.  Also the rank
program: ``python test_checkpoint_nocollectives.py CASE DIR``."""
import os
import sys

import numpy as np
import pytest

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from test_checkpoint_dist import expected, launch as _launch  # noqa: E402


def launch(case, nproc, ckdir):
    import test_checkpoint_dist
    old = test_checkpoint_dist.HERE
    test_checkpoint_dist.HERE = HERE
    try:
        return _launch(case, nproc, ckdir)
    finally:
        test_checkpoint_dist.HERE = old


def _state(torch, mesh, rank):
    from ember.distributed.tensor import Replicate, Shard, distribute_tensor
    return {"w": distribute_tensor(torch.from_numpy(expected("w")), mesh, [Shard(0)]),
            "v": distribute_tensor(torch.from_numpy(expected("v")), mesh, [Shard(1)]),
            "rep": distribute_tensor(torch.from_numpy(expected("r")), mesh, [Replicate()]),
            "t": torch.from_numpy(expected("nested")),
            "extra": {"epoch": 7, "tags": ["a", ("b", 2)]}}


def case_save2(ckdir):
    import ember as torch
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint import MetadataIndex
    from ember.distributed.device_mesh import init_device_mesh
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    if world == 3:
        # an earlier save without collectives on 3 ranks, overwritten below on 2
        dcp.save({"w": _state(torch, mesh, rank)["w"]}, checkpoint_id=ckdir,
                 use_collectives=False)
        assert os.path.exists(os.path.join(ckdir, "__2.metadata"))
        print(f"RANK{rank} OK", flush=True)
        return
    md = dcp.save(_state(torch, mesh, rank), checkpoint_id=ckdir, use_collectives=False)
    # this rank's own plan: its shards and every replicated value, all in its own file
    files = {i.relative_path for i in md.storage_data.values()}
    assert files == {f"__{rank}_0.distcp"}, files
    assert [c.offsets for c in md.state_dict_metadata["w"].chunks] == [(4 * rank, 0)]
    assert MetadataIndex("extra.epoch") in md.storage_data
    assert MetadataIndex("rep", (0,)) in md.storage_data
    names = sorted(os.listdir(ckdir))
    assert "__0.metadata" in names and "__1.metadata" in names, names
    assert ".metadata" not in names and "__2.metadata" not in names, names
    print(f"RANK{rank} OK", flush=True)


def _check(value, name, d=None):
    got = value.to_local() if d is not None else value
    want = expected(name)
    if d is not None:
        offsets, sizes = d._local_box()
        want = want[tuple(slice(o, o + s) for o, s in zip(offsets, sizes))]
    np.testing.assert_array_equal(got.numpy(), want, err_msg=name)


def case_load_plain(ckdir):
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    assert not dist.is_initialized()
    out = {}
    dcp.load(out, checkpoint_id=ckdir)
    for key, name in (("w", "w"), ("v", "v"), ("rep", "r"), ("t", "nested")):
        _check(out[key], name)
    assert out["extra"] == {"epoch": 7, "tags": ["a", ("b", 2)]}
    print("RANK0 OK", flush=True)


def case_load3(ckdir):
    import ember as torch
    import ember.distributed as dist
    import ember.distributed.checkpoint as dcp
    from ember.distributed.device_mesh import init_device_mesh
    from ember.distributed.tensor import Shard, distribute_tensor
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    sd = {"w": distribute_tensor(torch.zeros(8, 6), mesh, [Shard(1)]),
          "v": distribute_tensor(torch.zeros(5, 7, dtype=torch.float64), mesh, [Shard(0)]),
          "rep": distribute_tensor(torch.zeros(3, dtype=torch.int64), mesh, [Shard(0)]),
          "t": torch.zeros(2, 2), "extra": {"epoch": 0}}
    dcp.load(sd, checkpoint_id=ckdir)
    for key, name in (("w", "w"), ("v", "v"), ("rep", "r")):
        _check(sd[key], name, sd[key])
    _check(sd["t"], "nested")
    assert sd["extra"]["epoch"] == 7
    print(f"RANK{rank} OK", flush=True)


@pytest.mark.slow
def test_save_without_collectives_on_two_ranks_loads_on_one_and_three(tmp_path):
    ck = tmp_path / "ck"
    launch("case_save2", 3, ck)          # leaves __0..__2.metadata behind
    launch("case_save2", 2, ck)          # must drop __2.metadata, write __0 and __1 only
    launch("case_load_plain", None, ck)
    launch("case_load3", 3, ck)


def test_rank_pieces_that_disagree_are_corrupt(tmp_path):
    """Two pieces giving one key different global sizes cannot form a checkpoint."""
    import ember
    import ember.distributed.checkpoint as dcp
    from ember.distributed.checkpoint.filesystem import FileSystemReader, _write_metadata
    dcp.save({"a": ember.zeros(3)}, checkpoint_id=str(tmp_path / "x"))
    dcp.save({"a": ember.zeros(4)}, checkpoint_id=str(tmp_path / "y"))
    rx, ry = FileSystemReader(tmp_path / "x"), FileSystemReader(tmp_path / "y")
    mx, my = rx.read_metadata(), ry.read_metadata()
    d = tmp_path / "z"
    d.mkdir()
    _write_metadata(str(d), mx, final=str(d / "__0.metadata"))
    _write_metadata(str(d), my, final=str(d / "__1.metadata"))
    with pytest.raises(ValueError, match="rank 1's piece disagrees"):
        FileSystemReader(d).read_metadata()
    os.unlink(d / "__1.metadata")
    assert FileSystemReader(d).read_metadata().state_dict_metadata["a"].size == (3,)


if __name__ == "__main__":
    globals()[sys.argv[1]](sys.argv[2])
