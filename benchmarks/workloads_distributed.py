"""all_reduce bus bandwidth on 2 ranks: ember.distributed vs raw mpi4py vs torch's gloo.

Multi-process, so it runs as its own command rather than inside ``benchmarks.run``'s
single-process Timer loop:

    python -m benchmarks.workloads_distributed [--iters N]

Each size (4 MiB and 64 MiB of float32) is all-reduced ``iters`` times after a warm-up;
bus bandwidth = 2 (n-1)/n x bytes / time (NCCL-tests' definition).  ember and mpi4py run in
one ``mpiexec -n 2`` job on the same buffers; torch's gloo runs in two processes of its own.
"""
import argparse
import os
import socket
import subprocess
import sys
import textwrap

WORKLOADS_NOTE = "not registered in benchmarks.run: needs several processes"

EMBER_MPI = r'''
import sys, time, numpy as np, ember, ember.distributed as dist
from mpi4py import MPI
iters = int(sys.argv[1])
dist.init_process_group("gloo")
comm = MPI.COMM_WORLD.Dup()
n = dist.get_world_size()
for mib in (4, 64):
    numel = mib * 2**20 // 4
    t = ember.ones(numel)
    a = np.ones(numel, np.float32)
    res = {}
    for name, fn in (("ember", lambda: dist.all_reduce(t)),
                     ("mpi4py", lambda: comm.Allreduce(MPI.IN_PLACE, a))):
        fn(); fn()
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        dt = (time.perf_counter() - t0) / iters
        res[name] = 2 * (n - 1) / n * numel * 4 / dt / 1e9
    if dist.get_rank() == 0:
        print(f"RESULT {mib} ember {res['ember']:.3f} mpi4py {res['mpi4py']:.3f}", flush=True)
dist.destroy_process_group()
'''

TORCH_GLOO = r'''
import os, sys, time
import torch, torch.distributed as dist
iters = int(sys.argv[1])
dist.init_process_group("gloo")
n = dist.get_world_size()
for mib in (4, 64):
    numel = mib * 2**20 // 4
    t = torch.ones(numel)
    dist.all_reduce(t); dist.all_reduce(t); dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    dt = (time.perf_counter() - t0) / iters
    if dist.get_rank() == 0:
        print(f"RESULT {mib} torch_gloo {2 * (n - 1) / n * numel * 4 / dt / 1e9:.3f}", flush=True)
dist.destroy_process_group()
'''


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(code, iters, mpiexec=None):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                        "_dist_bench_worker.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(textwrap.dedent(code))
    if mpiexec:
        out = subprocess.run([mpiexec, "-n", "2", sys.executable, path, str(iters)],
                             stdout=subprocess.PIPE, text=True, timeout=600).stdout
    else:
        port = str(_port())
        procs = [subprocess.Popen([sys.executable, path, str(iters)], stdout=subprocess.PIPE,
                                  text=True, env=dict(os.environ, MASTER_ADDR="127.0.0.1",
                                                      MASTER_PORT=port, RANK=str(r),
                                                      WORLD_SIZE="2"))
                 for r in range(2)]
        out = "".join(p.communicate(timeout=600)[0] for p in procs)
    os.unlink(path)
    return [line.split()[1:] for line in out.splitlines() if line.startswith("RESULT")]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args(argv)
    from ember.distributed._launcher_util import find_mpiexec
    rows = {}
    for r in _run(EMBER_MPI, args.iters, find_mpiexec()):
        rows.setdefault(r[0], {}).update({r[1]: float(r[2]), r[3]: float(r[4])})
    try:
        import torch  # noqa: F401 - the oracle, optional
        for r in _run(TORCH_GLOO, args.iters):
            rows.setdefault(r[0], {})[r[1]] = float(r[2])
    except ImportError:
        pass
    print("all_reduce bus bandwidth, 2 ranks, GB/s")
    print(f"{'size':>8} {'ember':>8} {'mpi4py':>8} {'torch gloo':>11} {'ember/mpi4py':>13}")
    for mib, v in sorted(rows.items(), key=lambda kv: int(kv[0])):
        ratio = v.get("ember", 0) / v["mpi4py"] if v.get("mpi4py") else float("nan")
        print(f"{mib + ' MiB':>8} {v.get('ember', 0):8.2f} {v.get('mpi4py', 0):8.2f} "
              f"{v.get('torch_gloo', float('nan')):11.2f} {ratio:13.2f}")


if __name__ == "__main__":
    main()
