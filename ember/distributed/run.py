"""``emberrun`` / ``python -m ember.distributed.run``: torchrun's launcher, on mpiexec.

    emberrun --standalone --nproc-per-node 4 train.py --lr 0.1
    emberrun --nnodes 2 --node-rank 0 --master-addr HOST0 --master-port 29500 \\
        --nproc-per-node 8 train.py        # and the same with --node-rank 1 on the other node

Each worker is started as its own ``mpiexec -n 1`` launch with torchrun's environment (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID, TORCHELASTIC_RESTART_COUNT, ...); ``init_process_group`` then joins the
workers of every node into one MPI world (see ``ember.distributed._mpi``).  The launcher of
node 0 hosts the rendezvous TCPStore (workers are told TORCHELASTIC_USE_AGENT_STORE=True), so
the store outlives any worker.  When a worker fails, the launcher reports its rank, pid and
exit code, stops the node's other workers and, while ``--max-restarts`` allows, starts the
group again; otherwise it exits with status 1.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

from ._launcher_util import find_mpiexec

__all__ = ["main", "get_args_parser", "parse_args", "run"]


def get_args_parser():
    p = argparse.ArgumentParser(prog="emberrun", description="ember's distributed launcher "
                                "(torchrun's flags); workers start through mpiexec")
    a = p.add_argument
    a("--nnodes", type=str, default="1", help="number of nodes, or MIN:MAX")
    a("--nproc-per-node", "--nproc_per_node", type=str, default="1",
      help="workers per node (an int, or 'cpu'/'auto')")
    a("--node-rank", "--node_rank", type=int, default=0)
    a("--master-addr", "--master_addr", type=str, default="127.0.0.1")
    a("--master-port", "--master_port", type=int, default=29500)
    a("--rdzv-endpoint", "--rdzv_endpoint", type=str, default="")
    a("--rdzv-backend", "--rdzv_backend", type=str, default="static")
    a("--rdzv-id", "--rdzv_id", type=str, default="none")
    a("--rdzv-conf", "--rdzv_conf", type=str, default="")
    a("--standalone", action="store_true",
      help="single node: a free local port for the rendezvous")
    a("--max-restarts", "--max_restarts", type=int, default=0)
    a("--monitor-interval", "--monitor_interval", type=float, default=0.1)
    a("--start-method", "--start_method", type=str, default="spawn")
    a("--role", type=str, default="default")
    a("--log-dir", "--log_dir", type=str, default=None)
    a("--redirects", "-r", type=str, default="0")
    a("--tee", "-t", type=str, default="0")
    a("--local-addr", "--local_addr", type=str, default=None)
    a("-m", "--module", action="store_true", help="run training_script as a Python module")
    a("--no-python", "--no_python", action="store_true",
      help="run training_script as an executable, not through Python")
    a("--run-path", "--run_path", action="store_true")
    a("training_script", type=str)
    a("training_script_args", nargs=argparse.REMAINDER)
    return p


def parse_args(args=None):
    return get_args_parser().parse_args(args)


def _free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _nproc(value):
    if value in ("cpu", "auto", "gpu"):
        return os.cpu_count() or 1
    return int(value)


def _nnodes(value):
    return int(str(value).split(":")[-1])


def _say(msg):
    print(f"[emberrun] {msg}", file=sys.stderr, flush=True)


class _Group:
    def __init__(self, cmds, envs):
        self.procs = [subprocess.Popen(c, env=e) for c, e in zip(cmds, envs)]

    def stop(self, grace=5.0):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + grace
        for p in self.procs:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def run(args, extra_worker_args=None):
    """Runs the workers described by the parsed ``args``; returns the exit status."""
    nnodes = _nnodes(args.nnodes)
    nproc = _nproc(args.nproc_per_node)
    addr, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, p = args.rdzv_endpoint.rpartition(":")
        addr, port = (host or args.rdzv_endpoint), int(p) if p.isdigit() else 29400
    if args.standalone:
        nnodes, addr, port = 1, "127.0.0.1", _free_port()
        args.node_rank = 0
    if not 0 <= args.node_rank < nnodes:
        raise ValueError(f"--node-rank {args.node_rank} must be in [0, --nnodes={nnodes})")
    world = nnodes * nproc
    run_id = args.rdzv_id if args.rdzv_id != "none" else (
        uuid.uuid4().hex[:12] if args.standalone else "none")
    store = None
    if args.node_rank == 0:
        from ._store import TCPStore
        store = TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False)
        port = store.port
    mpiexec = find_mpiexec(required=True)
    if args.no_python:
        prog = [args.training_script]
    elif args.module:
        prog = [sys.executable, "-u", "-m", args.training_script]
    else:
        prog = [sys.executable, "-u", args.training_script]
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("PMI_", "PMIX_", "HYDRA_", "MPI_LOCAL"))}
    if nproc > 1 and "OMP_NUM_THREADS" not in base:
        base["OMP_NUM_THREADS"] = "1"
    restarts = 0
    stop = {"sig": None}

    def on_signal(signum, frame):
        stop["sig"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            cmds, envs = [], []
            for local in range(nproc):
                rank = args.node_rank * nproc + local
                env = dict(base, RANK=str(rank), LOCAL_RANK=str(local), WORLD_SIZE=str(world),
                           LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(args.node_rank),
                           GROUP_WORLD_SIZE=str(nnodes), ROLE_RANK=str(rank),
                           ROLE_WORLD_SIZE=str(world), ROLE_NAME=args.role,
                           MASTER_ADDR=addr, MASTER_PORT=str(port), TORCHELASTIC_RUN_ID=run_id,
                           TORCHELASTIC_RESTART_COUNT=str(restarts),
                           TORCHELASTIC_MAX_RESTARTS=str(args.max_restarts),
                           TORCHELASTIC_USE_AGENT_STORE="True")
                extra = [a.format(local_rank=local) for a in (extra_worker_args or [])]
                cmds.append([mpiexec, "-n", "1"] + prog + extra + list(args.training_script_args))
                envs.append(env)
            group = _Group(cmds, envs)
            failed = None
            while failed is None:
                if stop["sig"] is not None:
                    _say(f"received signal {stop['sig']}; stopping the workers")
                    group.stop()
                    return 128 + stop["sig"]
                codes = [p.poll() for p in group.procs]
                bad = [i for i, c in enumerate(codes) if c not in (None, 0)]
                if bad:
                    failed = bad[0]
                    break
                if all(c == 0 for c in codes):
                    return 0
                time.sleep(args.monitor_interval)
            code = group.procs[failed].returncode
            rank = args.node_rank * nproc + failed
            _say(f"worker rank {rank} (local_rank {failed}, pid {group.procs[failed].pid}) "
                 f"failed with exit code {code}; stopping the other workers of this node")
            group.stop()
            if restarts >= args.max_restarts:
                _say(f"giving up after {restarts} restart(s): rank {rank} exited with code "
                     f"{code}")
                return 1
            restarts += 1
            _say(f"restarting the worker group (restart {restarts} of {args.max_restarts})")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        del store


def main(args=None):
    sys.exit(run(parse_args(args)))


if __name__ == "__main__":
    main()
