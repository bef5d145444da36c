"""Distributed checkpoint throughput on 2 ranks: ember.distributed.checkpoint against
torch.distributed.checkpoint in the same run, and against the disk's raw sequential write
speed measured alongside.

    python -m benchmarks.dcp [--mb 200] [--iters 1] [--rounds 3] [--nproc 2] [--dir DIR]
                             [--json PATH]

The state dict is ``--mb`` MB of float32 tensors (32 of them) sharded row-wise over the
ranks as DTensors, so each rank writes and reads its half.  Figures are MB/s of the whole
state dict (median over ``--iters``, slowest rank): ``save`` (files fsynced, as both
libraries do by default), ``load`` (into the same layout; the files are likely still in the
page cache, so this is mostly copy speed), and ``raw`` (each rank writes its shard bytes to
one file with ``write`` + ``fsync``; the ceiling for a save).  The libraries alternate for
``--rounds`` rounds (ember, torch, ember, ...) and each figure is the median over rounds,
so load changes on a shared machine hit both alike.  Ranks are started with ``mpiexec``
(torch's ranks read their rank from the MPI process manager).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

N_TENSORS = 32


def _state(lib, mesh, dt, mb):
    rows = int(mb * 2 ** 20 / 4 / N_TENSORS / 1024)
    rng = np.random.default_rng(0)
    sd = {}
    for i in range(N_TENSORS):
        full = lib.from_numpy(rng.standard_normal((rows, 1024), dtype=np.float32))
        sd[f"layer{i}.weight"] = dt.distribute_tensor(full, mesh, [dt.Shard(0)])
    return sd, rows * 1024 * 4 * N_TENSORS / 2 ** 20


def _raw_write(path, arrays):
    t0 = time.perf_counter()
    with open(path, "wb") as f:
        for a in arrays:
            f.write(memoryview(np.ascontiguousarray(a)).cast("B"))
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - t0


def rank_main(lib_name, mb, iters, root):
    if lib_name == "ember":
        import ember as lib
        import ember.distributed as dist
        import ember.distributed.checkpoint as dcp
        import ember.distributed.tensor as dt
        from ember.distributed.device_mesh import init_device_mesh
        dist.init_process_group("gloo")
    else:
        import torch as lib
        import torch.distributed as dist
        import torch.distributed.checkpoint as dcp
        import torch.distributed.tensor as dt
        from torch.distributed.device_mesh import init_device_mesh
        dist.init_process_group("gloo", rank=int(os.environ["PMI_RANK"]),
                                world_size=int(os.environ["PMI_SIZE"]))
    lib.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    sd, total_mb = _state(lib, mesh, dt, mb)
    target, _ = _state(lib, mesh, dt, mb)
    locals_ = [v.to_local().numpy() for v in sd.values()]
    saves, loads, raws = [], [], []
    for it in range(iters):
        path = os.path.join(root, f"{lib_name}_{it}")
        dist.barrier()
        t0 = time.perf_counter()
        dcp.save(sd, checkpoint_id=path)
        dist.barrier()
        saves.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        dcp.load(target, checkpoint_id=path)
        dist.barrier()
        loads.append(time.perf_counter() - t0)
        raw_path = os.path.join(root, f"raw_{lib_name}_{it}_{rank}.bin")
        dist.barrier()
        t0 = time.perf_counter()
        _raw_write(raw_path, locals_)
        dist.barrier()
        raws.append(time.perf_counter() - t0)
        os.unlink(raw_path)
        if rank == 0:
            shutil.rmtree(path, ignore_errors=True)
    for a, b in zip(sd.values(), target.values()):
        assert np.array_equal(a.to_local().numpy(), b.to_local().numpy())
    if rank == 0:
        res = {"total_mb": total_mb,
               "save_mb_s": total_mb / statistics.median(saves),
               "load_mb_s": total_mb / statistics.median(loads),
               "raw_write_mb_s": total_mb / statistics.median(raws)}
        print("RESULT " + json.dumps(res), flush=True)
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(lib_name, nproc, mb, iters, root, timeout=1200):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [mpiexec, "-n", str(nproc), sys.executable, "-m", "benchmarks.dcp", "--rank-program",
           lib_name, "--mb", str(mb), "--iters", str(iters), "--dir", root]
    cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{lib_name} ranks failed ({proc.returncode}):\n{proc.stdout}\n"
                       f"{proc.stderr[-4000:]}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mb", type=float, default=200.0)
    p.add_argument("--iters", type=int, default=1, help="saves/loads per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--dir", help="where checkpoints are written (default: a temporary "
                                 "directory)")
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--rank-program", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank_program:
        rank_main(args.rank_program, args.mb, args.iters, args.dir)
        return
    root = args.dir or tempfile.mkdtemp(prefix="ember_dcp_bench_")
    libs = ["ember"]
    try:
        import torch  # noqa: F401
        libs.append("torch")
    except ImportError:
        pass
    try:
        rounds = {lib: [] for lib in libs}
        for _ in range(args.rounds):
            for lib in libs:
                rounds[lib].append(run(lib, args.nproc, args.mb, args.iters, root))
        res = {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for lib, rs in rounds.items()}
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    total = res["ember"]["total_mb"]
    print(f"DCP, {args.nproc} ranks, {total:.0f} MB state dict, median of {args.rounds} "
          f"alternating rounds (MB/s of the whole state dict; slowest rank)")
    print(f"{'lib':6s} {'save':>9s} {'load':>9s} {'raw write':>10s} {'save/raw':>9s}")
    for lib in libs:
        r = res[lib]
        print(f"{lib:6s} {r['save_mb_s']:9.1f} {r['load_mb_s']:9.1f} "
              f"{r['raw_write_mb_s']:10.1f} {r['save_mb_s'] / r['raw_write_mb_s']:9.2f}")
    if "torch" in res:
        print(f"ember/torch throughput: save {res['ember']['save_mb_s'] / res['torch']['save_mb_s']:.2f}x, "
              f"load {res['ember']['load_mb_s'] / res['torch']['load_mb_s']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nproc": args.nproc, "results": res, "rounds": rounds}, f, indent=1)


if __name__ == "__main__":
    main()
