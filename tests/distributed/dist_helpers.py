"""Helpers shared by the multi-process tests of ember.distributed (tests/distributed).

`run_ranks(code, n)` writes ``code`` to a temporary script and runs it on ``n`` ranks through
``mpiexec -n n`` (mpich's wheel), bounded by ``timeout`` seconds, and returns
(exit status, combined output).  Worker scripts assert their own results and print
``RANK<r> OK``; tests check that line for every rank.  `free_port()` picks a TCP port.
"""
import os
import socket
import subprocess
import sys
import tempfile
import textwrap

from ember.distributed._launcher_util import find_mpiexec

PY = sys.executable


def free_port():
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
