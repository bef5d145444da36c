"""Helpers shared by the multi-process tests of ember.distributed (tests/distributed).

`run_ranks(code, n)` writes ``code`` to a temporary script and runs it on ``n`` ranks through
``mpiexec -n n`` (mpich's wheel), bounded by ``timeout`` seconds, and returns
(exit status, combined output).  Worker scripts assert their own results and print
``RANK<r> OK``; tests check that line for every rank.  `free_port()` picks a TCP port.
"""
import os
import random
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

from ember.distributed._launcher_util import find_mpiexec

PY = sys.executable


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A port free now and outside the kernel's ephemeral range: a port taken from that range
    (``bind(0)``) can be handed to another process's outgoing connection before the rank
    that should listen on it binds it (seen in CI: EADDRINUSE in rank 0's store)."""
    low, high = _ephemeral_range()
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(20000, low) if low > 20100 else rng.randrange(high + 1, 65535)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_script(code, tmpdir):
    path = os.path.join(tmpdir, "worker.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(code))
    return path


def _env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPI_LOCAL"))}
    env.update(extra or {})
    return env


def run_cmd(cmd, timeout=60, env=None, cwd=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=_env(env), cwd=cwd)
    return p.returncode, p.stdout


def run_ranks(code, n, timeout=60, env=None):
    with tempfile.TemporaryDirectory() as d:
        path = write_script(code, d)
        return run_cmd([find_mpiexec(), "-n", str(n), PY, path], timeout, env, cwd=d)
