"""all_reduce bus bandwidth on the same ranks: ember.distributed vs raw mpi4py vs torch gloo.

    python -m benchmarks.ddp_allreduce [--nproc 2] [--rounds 7] [--sizes 4 64]

One ``mpiexec -n N`` job runs all of them in the same processes, on the same float32
buffers, in interleaved rounds (ember, ember without the mismatch check, mpi4py, torch gloo,
then again), so that load changes on a shared machine hit them alike; each figure is the
median over rounds of the mean time of one call.  Bus bandwidth = 2 (n-1)/n x bytes / time
(NCCL-tests' definition).  Also: how long an ``async_op=True`` launch takes when the peer
arrives 20 ms late (it must not wait for it).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import numpy as np


def rank_main(sizes, rounds):
    import ember
    import ember.distributed as dist
    from mpi4py import MPI
    dist.init_process_group("gloo")
    comm = MPI.COMM_WORLD.Dup()
    n, rank = dist.get_world_size(), dist.get_rank()
    try:
        import torch
        import torch.distributed as tdist
        # its own store: ember's TCP store already listens on MASTER_PORT
        tdist.init_process_group("gloo", init_method=os.environ["TORCH_INIT"], rank=rank,
                                 world_size=n)
    except ImportError:
        torch = None
    results = {}
    for mib in sizes:
        numel = mib * 2 ** 20 // 4
        iters = max(2, 40 // mib)
        e = ember.ones(numel)
        a = np.ones(numel, np.float32)
        fns = {"ember": lambda: dist.all_reduce(e), "mpi4py":
               lambda: comm.Allreduce(MPI.IN_PLACE, [a, MPI.FLOAT], MPI.SUM)}

        def unchecked():
            os.environ["EMBER_DISTRIBUTED_CHECK"] = "0"
            try:
                dist.all_reduce(e)
            finally:
                del os.environ["EMBER_DISTRIBUTED_CHECK"]
        fns["ember_nocheck"] = unchecked
        if torch is not None:
            t = torch.ones(numel)
            fns["torch_gloo"] = lambda: tdist.all_reduce(t)
        times = {k: [] for k in fns}
        for rnd in range(rounds + 1):
            for name, fn in fns.items():
                fn()
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                dt = (time.perf_counter() - t0) / iters
                if rnd:  # round 0 warms up
                    times[name].append(dt)
        row = {}
        for name, ts in times.items():
            dt = np.array([statistics.median(ts)])
            comm.Allreduce(MPI.IN_PLACE, dt, MPI.MAX)  # the slower rank's time
            row[name] = 2 * (n - 1) / n * numel * 4 / dt[0] / 1e9
        results[f"{mib}"] = row
    # an async launch while the peer is 20 ms late: the launch must not wait
    launches = []
    for _ in range(5):
        comm.Barrier()
        if rank == n - 1:
            time.sleep(0.02)
        t0 = time.perf_counter()
        w = dist.all_reduce(ember.ones(1024), async_op=True)
        launches.append(time.perf_counter() - t0)
        w.wait()
    results["async_launch_ms_rank0"] = statistics.median(launches) * 1e3
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)
    dist.destroy_process_group()
    if torch is not None:
        tdist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sizes", type=int, nargs="+", default=[4, 64], help="MiB")
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--rank-program", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank_program:
        rank_main(args.sizes, args.rounds)
        return
    from ember.distributed._launcher_util import find_mpiexec
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               TORCH_INIT=f"tcp://127.0.0.1:{_free_port()}",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [find_mpiexec(), "-n", str(args.nproc), sys.executable, "-m",
           "benchmarks.ddp_allreduce", "--rank-program", "--rounds", str(args.rounds),
           "--sizes", *map(str, args.sizes)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"ranks failed ({proc.returncode}):\n{proc.stdout}\n"
                           f"{proc.stderr[-4000:]}")
    res = json.loads(lines[-1][len("RESULT "):])
    print(f"all_reduce bus bandwidth, {args.nproc} ranks, GB/s (median of {args.rounds} "
          f"interleaved rounds, slowest rank)")
    print(f"{'size':>8} {'ember':>8} {'nocheck':>8} {'mpi4py':>8} {'torch gloo':>11} "
          f"{'ember/mpi4py':>13} {'ember/gloo':>11}")
    for mib in map(str, args.sizes):
        v = res[mib]
        g = v.get("torch_gloo", float("nan"))
        print(f"{mib + ' MiB':>8} {v['ember']:8.2f} {v['ember_nocheck']:8.2f} "
              f"{v['mpi4py']:8.2f} {g:11.2f} {v['ember'] / v['mpi4py']:13.2f} "
              f"{v['ember'] / g:11.2f}")
    print(f"async all_reduce launch with the peer 20 ms late: "
          f"{res['async_launch_ms_rank0']:.3f} ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nproc": args.nproc, "results": res}, f, indent=1)


if __name__ == "__main__":
    main()
