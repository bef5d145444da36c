"""Single-process checks of ember.distributed's API (a world of one rank)."""
import datetime

import numpy as np
import pytest

import ember
import ember.distributed as dist


def test_enums_and_availability():
    assert dist.is_available() and dist.is_gloo_available() and not dist.is_nccl_available()
    assert dist.Backend("GLOO") == "gloo" and dist.Backend.MPI == "mpi"
    assert dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM
    assert {dist.ReduceOp.AVG, dist.ReduceOp.BXOR} <= set(dist.ReduceOp.RedOpType)
    assert issubclass(dist.DistBackendError, RuntimeError)
    assert not dist.is_initialized() and dist.group.WORLD is None
    with pytest.raises(ValueError, match="not been initialized"):
        dist.get_rank()


def test_nccl_is_a_clear_error():
    with pytest.raises(RuntimeError, match="GPUs"):
        dist.init_process_group("nccl", rank=0, world_size=1, store=dist.HashStore())
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("bogus", rank=0, world_size=1, store=dist.HashStore())


@pytest.mark.slow
def test_world_of_one(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=10))
    try:
        assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
        t = ember.arange(4.0)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert np.array_equal(t._data, np.arange(4.0, dtype=np.float32))
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
        with pytest.raises(TypeError, match="complex"):
            dist.all_reduce(ember.zeros(2, dtype=ember.complex64), op=dist.ReduceOp.MAX)
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized()
