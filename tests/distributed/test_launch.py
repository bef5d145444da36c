"""emberrun (python -m ember.distributed.run): env, multi-node join, failures, restarts."""
import os
import subprocess
import sys

import pytest

from dist_helpers import free_port, run_cmd, write_script

pytestmark = pytest.mark.slow

WORKER = r'''
import os, ember, ember.distributed as dist
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
assert r == int(os.environ["RANK"]) and n == int(os.environ["WORLD_SIZE"])
for k in ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
          "TORCHELASTIC_RUN_ID"):
    assert k in os.environ, k
t = ember.ones(1) * r; dist.all_reduce(t)
assert t.item() == n * (n - 1) / 2
if os.environ.get("DIE") == str(r) and os.environ["TORCHELASTIC_RESTART_COUNT"] == os.environ.get("DIE_ON", "0"):
    os._exit(7)
dist.barrier()
print(f"RANK{r} OK local={os.environ['LOCAL_RANK']} node={os.environ['GROUP_RANK']}", flush=True)
dist.destroy_process_group()
'''

RUN = [sys.executable, "-m", "ember.distributed.run"]


def test_standalone_two_ranks(tmp_path):
    path = write_script(WORKER, str(tmp_path))
    rc, out = run_cmd(RUN + ["--standalone", "--nproc-per-node", "2", path], timeout=60)
    assert rc == 0, out[-3000:]
    assert "RANK0 OK local=0" in out and "RANK1 OK local=1" in out


def test_two_launchers_join_as_two_nodes(tmp_path):
    path = write_script(WORKER, str(tmp_path))
    port = str(free_port())
    common = ["--nnodes", "2", "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
              "--master-port", port]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMI")}
    other = subprocess.Popen(RUN + common + ["--node-rank", "1", path], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rc, out = run_cmd(RUN + common + ["--node-rank", "0", path], timeout=60)
    out1 = other.communicate(timeout=60)[0]
    assert rc == 0 and other.returncode == 0, out[-2000:] + out1[-2000:]
    assert "RANK0 OK local=0 node=0" in out and "RANK1 OK local=0 node=1" in out1


def test_dead_rank_reported_and_restart(tmp_path):
    path = write_script(WORKER, str(tmp_path))
    rc, out = run_cmd(RUN + ["--standalone", "--nproc-per-node", "2", path], timeout=60,
                      env={"DIE": "1"})
    assert rc == 1, out[-3000:]
    assert "worker rank 1" in out and "exit code 7" in out
    rc, out = run_cmd(RUN + ["--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                             path], timeout=90, env={"DIE": "1"})
    assert rc == 0, out[-3000:]
    assert "restart 1 of 1" in out and "RANK0 OK" in out and "RANK1 OK" in out


def test_direct_mpiexec(tmp_path):
    from dist_helpers import run_ranks
    code = WORKER.replace('assert r == int(os.environ["RANK"]) and n == int(os.environ["WORLD_SIZE"])', "")
    code = code.replace('"LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",\n          "TORCHELASTIC_RUN_ID"', "")
    code = code.replace("local={os.environ['LOCAL_RANK']} node={os.environ['GROUP_RANK']}", "")
    rc, out = run_ranks(code, 3, timeout=60)
    assert rc == 0 and all(f"RANK{r} OK" in out for r in range(3)), out[-3000:]
