"""ember.multiprocessing: spawn (errors, exit codes, the DDP tutorial pattern), shared tensors."""
import os
import subprocess
import sys

import pytest

import ember
import ember.multiprocessing as mp

from dist_helpers import free_port, write_script

SCRIPT = r'''
import os, sys, ember, ember.distributed as dist, ember.multiprocessing as mp

def tutorial(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    t = ember.ones(2) * (rank + 1); dist.all_reduce(t)
    assert t.tolist() == [world_size * (world_size + 1) / 2] * 2
    print(f"CHILD{rank} OK", flush=True)
    dist.destroy_process_group()

def raises(rank):
    if rank == 1:
        raise ValueError("boom in child")

def exits(rank):
    if rank == 0:
        sys.exit(3)

def hogwild(rank, t):
    t.add_(rank + 1)

if __name__ == "__main__":
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = sys.argv[1]
    mp.spawn(tutorial, args=(2,), nprocs=2)
    try:
        mp.spawn(raises, nprocs=2); raise SystemExit("no error")
    except mp.ProcessRaisedException as e:
        assert e.error_index == 1 and "ValueError: boom in child" in str(e) and "raises" in str(e)
    try:
        mp.spawn(exits, nprocs=2); raise SystemExit("no error")
    except mp.ProcessExitedException as e:
        assert e.error_index == 0 and e.exit_code == 3 and "exit code 3" in str(e)
    t = ember.zeros(3).share_memory_()
    assert t.is_shared()
    mp.spawn(hogwild, args=(t,), nprocs=2)
    assert t.tolist() == [3.0, 3.0, 3.0], t
    ctx = mp.spawn(raises, nprocs=1, join=False)
    assert ctx.join()
    print("PARENT OK", flush=True)
'''


@pytest.mark.slow
def test_spawn_tutorial_errors_and_sharing(tmp_path):
    path = write_script(SCRIPT, str(tmp_path))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMI")}
    p = subprocess.run([sys.executable, path, str(free_port())], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "CHILD0 OK" in p.stdout and "CHILD1 OK" in p.stdout and "PARENT OK" in p.stdout


def _child_inc(q, t, done):
    t.mul_(2)
    q.put(ember.arange(3.0))
    done.wait(60)   # as in torch, the producer of a shared tensor outlives its consumers


@pytest.mark.slow
def test_process_and_queue_share_tensors():
    ctx = mp.get_context("spawn")
    t = ember.ones(4)
    q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_child_inc, args=(q, t, done))
    p.start()
    got = q.get(timeout=60).clone()
    done.set()
    p.join(60)
    assert p.exitcode == 0
    assert t.is_shared() and t.tolist() == [2.0] * 4   # the child's in-place update is seen
    assert got.tolist() == [0.0, 1.0, 2.0]


def test_share_memory_and_module():
    t = ember.zeros(2, 3)
    t[1] = 3.0
    assert not t.is_shared()
    v = t[:, 1]
    v.share_memory_()
    assert v.is_shared() and t.is_shared() and v.tolist() == [0.0, 3.0]
    v.add_(1)
    assert t[:, 1].tolist() == [1.0, 4.0]
    m = ember.nn.Linear(2, 2).share_memory()
    assert all(p.is_shared() for p in m.parameters())


def test_api_surface():
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    mp.set_sharing_strategy("file_system")
    with pytest.raises(ValueError):
        mp.set_sharing_strategy("nope")
    assert "spawn" in mp.get_all_start_methods()
    assert mp.SimpleQueue and mp.Pool and mp.Process and mp.set_start_method


def test_compat_maps_torch_multiprocessing():
    code = ("import ember.compat as c; c.install(); import torch.multiprocessing as m; "
            "import ember.multiprocessing as e; assert m is e; print('ok')")
    p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                       timeout=60)
    assert p.stdout.strip() == "ok"
