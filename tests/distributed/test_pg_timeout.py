"""Reliability: a missing rank makes every waiting rank raise DistBackendError in time."""
import pytest

from dist_helpers import run_ranks

pytestmark = pytest.mark.slow

SKIP = r'''
import time, datetime, ember, ember.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
r = dist.get_rank()
dist.all_reduce(ember.ones(2))
if r == 1:
    time.sleep(6)          # rank 1 misses the next collective
    print("RANK1 OK", flush=True)
else:
    t0 = time.monotonic()
    try:
        dist.all_reduce(ember.ones(2))
        raise SystemExit("no error")
    except dist.DistBackendError as e:
        took = time.monotonic() - t0
        msg = str(e)
        assert isinstance(e, RuntimeError)
        assert "all_reduce" in msg and "sequence number 2" in msg and "[1]" in msg, msg
        assert took < 6, took
        print("RANK0 OK", msg, flush=True)
'''

MISMATCH = r'''
import ember, ember.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
try:
    if r == 0:
        dist.all_reduce(ember.ones(2))
    else:
        dist.broadcast(ember.ones(2), src=0)
    raise SystemExit("no error")
except dist.DistBackendError as e:
    assert "mismatch" in str(e) and "broadcast" in str(e) and "all_reduce" in str(e), str(e)
    print(f"RANK{r} OK", flush=True)
'''

KILLED = r'''
import os, time, datetime, ember, ember.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=3))
r = dist.get_rank()
for step in range(3):
    dist.all_reduce(ember.ones(4))
if r == 2:
    os._exit(9)            # dies mid-training
t0 = time.monotonic()
try:
    dist.all_reduce(ember.ones(4))
    raise SystemExit("no error")
except dist.DistBackendError as e:
    assert "[2]" in str(e) and time.monotonic() - t0 < 8, str(e)
    print(f"RANK{r} OK", flush=True)
    time.sleep(2)          # rank 0 hosts the store: keep it up while rank 1 reads it
'''


def test_skipped_collective_times_out_naming_rank():
    rc, out = run_ranks(SKIP, 2, timeout=60)
    assert rc == 0 and "RANK0 OK" in out and "RANK1 OK" in out, out[-3000:]


def test_mismatched_collectives_detected():
    rc, out = run_ranks(MISMATCH, 2, timeout=60)
    assert rc == 0 and "RANK0 OK" in out and "RANK1 OK" in out, out[-3000:]


def test_killed_rank_under_spawned_ranks(tmp_path):
    # separate `mpiexec -n 1` launches (the launcher's way): survivors raise, nothing hangs
    import subprocess
    import sys
    from dist_helpers import find_mpiexec, free_port, write_script, _env
    path = write_script(KILLED, str(tmp_path))
    port = free_port()
    procs = [subprocess.Popen([find_mpiexec(), "-n", "1", sys.executable, path],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=_env(dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                                            RANK=str(r), WORLD_SIZE="3")))
             for r in range(3)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert "RANK0 OK" in outs[0], outs[0][-2000:]
    assert "RANK1 OK" in outs[1], outs[1][-2000:]
    assert procs[2].returncode != 0
