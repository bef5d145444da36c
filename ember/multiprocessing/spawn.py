"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` new processes.

With the default ``start_method='spawn'`` every child is started as its own ``mpiexec -n 1``
launch (when mpiexec is installed), so children can form one ember.distributed world with
``init_process_group`` (the DDP tutorial pattern) and each exits, or dies, on its own; without
mpiexec they are plain processes.  A child re-imports the parent's main module as
``__mp_main__`` exactly as multiprocessing's spawn does, so ``fn`` can live in the script.
An exception in a child is re-raised in the parent as `ProcessRaisedException` carrying the
child's traceback; a child that exits with a non-zero code (or is killed) gives
`ProcessExitedException` with its exit code.  Either way the other children are stopped.
``fork`` and ``forkserver`` use multiprocessing's own processes (no MPI in the children).
"""
import multiprocessing
import multiprocessing.spawn as _mpspawn
import os
import signal
import subprocess
import sys
import tempfile
import time
from multiprocessing.reduction import ForkingPickler

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException",
           "ProcessRaisedException", "ProcessExitedException"]


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A child process exited with a non-zero exit code (or was killed by a signal)."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _clean_env():
    # a child mpiexec must not see the process-manager variables of a launch around us
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPI_LOCAL"))}
    try:
        from ..compat import is_installed
        if is_installed():
            env["EMBER_COMPAT"] = "1"
    except ImportError:
        pass
    return env


class _Child:
    """One child process: a Popen (spawn) or a multiprocessing Process (fork/forkserver)."""

    def __init__(self, popen=None, process=None):
        self.popen, self.process = popen, process

    @property
    def pid(self):
        return self.popen.pid if self.popen is not None else self.process.pid

    def poll(self):
        if self.popen is not None:
            return self.popen.poll()
        return self.process.exitcode

    def wait(self, timeout):
        if self.popen is not None:
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        else:
            self.process.join(timeout)

    def terminate(self):
        if self.poll() is None:
            if self.popen is not None:
                self.popen.terminate()
            else:
                self.process.terminate()

    def kill(self):
        if self.poll() is None:
            if self.popen is not None:
                self.popen.kill()
            else:
                self.process.kill()


class ProcessContext:
    """The children started by `start_processes`; `join` waits for them."""

    def __init__(self, processes, error_files, tmpdir=None):
        self.processes = processes
        self.error_files = error_files
        self._tmpdir = tmpdir
        self.sentinels = {}

    def pids(self):
        return [p.pid for p in self.processes]

    def _stop_all(self, grace_period=None):
        for p in self.processes:
            p.terminate()
        deadline = time.monotonic() + (5.0 if grace_period is None else grace_period)
        for p in self.processes:
            p.wait(max(0.0, deadline - time.monotonic()))
        for p in self.processes:
            p.kill()
            p.wait(1.0)

    def join(self, timeout=None, grace_period=None):
        """Waits for the children; True once all exited successfully, False if ``timeout``
        passed first.  Raises `ProcessRaisedException`/`ProcessExitedException` for the first
        child that failed, after stopping the others."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            codes = [p.poll() for p in self.processes]
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                i = failed[0]
                self._stop_all(grace_period)
                self._raise(i, codes[i])
            if all(c == 0 for c in codes):
                self._cleanup()
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _raise(self, i, code):
        pid = self.processes[i].pid
        path = self.error_files[i]
        tb = None
        if path and os.path.exists(path) and os.path.getsize(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                tb = f.read()
        self._cleanup()
        if tb is not None:
            raise ProcessRaisedException(
                f"\n\n-- Process {i} terminated with the following error:\n{tb}", i, pid)
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {i} terminated with signal {name}", i, pid,
                                         code, name)
        raise ProcessExitedException(f"process {i} terminated with exit code {code}", i, pid,
                                     code)

    def _cleanup(self):
        if self._tmpdir is not None:
            for name in os.listdir(self._tmpdir):
                try:
                    os.unlink(os.path.join(self._tmpdir, name))
                except OSError:
                    pass
            try:
                os.rmdir(self._tmpdir)
            except OSError:
                pass
            self._tmpdir = None


def _find_mpiexec():
    from ..distributed._launcher_util import find_mpiexec
    return find_mpiexec(required=False)


def _wrap_fork(fn, i, args, error_file):
    from ._child import run_guarded
    run_guarded(fn, i, args, error_file)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Starts ``nprocs`` processes running ``fn(i, *args)`` (``i`` in 0..nprocs-1); returns
    a `ProcessContext` when ``join`` is False, else waits for them (see
    `ProcessContext.join`)."""
    from .reductions import init_reductions
    init_reductions()
    tmpdir = tempfile.mkdtemp(prefix="ember_spawn_")
    error_files = [os.path.join(tmpdir, f"error_{i}.txt") for i in range(nprocs)]
    children = []
    if start_method == "spawn":
        prep = _mpspawn.get_preparation_data("ember-spawn")
        # an AuthenticationString refuses pickling outside multiprocessing's own Popen
        prep["authkey"] = bytes(prep["authkey"])
        payload = os.path.join(tmpdir, "payload.pkl")
        with open(payload, "wb") as f:
            ForkingPickler(f, 4).dump(prep)
            ForkingPickler(f, 4).dump((fn, tuple(args)))
        mpiexec = _find_mpiexec()
        env = _clean_env()
        for i in range(nprocs):
            cmd = [sys.executable, "-m", "ember.multiprocessing._child", payload, str(i),
                   error_files[i]]
            if mpiexec:
                cmd = [mpiexec, "-n", "1"] + cmd
            children.append(_Child(popen=subprocess.Popen(cmd, env=env)))
    else:
        ctx = multiprocessing.get_context(start_method)
        for i in range(nprocs):
            p = ctx.Process(target=_wrap_fork, args=(fn, i, args, error_files[i]), daemon=daemon)
            p.start()
            children.append(_Child(process=p))
    context = ProcessContext(children, error_files, tmpdir)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawns ``nprocs`` processes that run ``fn`` with ``args`` (``fn(i, *args)``).

    An exception in any child stops the others and is re-raised here with the child's
    traceback (`ProcessRaisedException`); a non-zero exit gives `ProcessExitedException`."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
