"""DistributedDataParallel training step on 2 ranks: ember (MPI) against torch DDP (gloo),
in the same run, for the benchmark MLP and tiny GPT of ``workloads_nn`` and a wide MLP
whose 17 MB of gradients make communication a large part of the step.

    python -m benchmarks.ddp [--iters N] [--nproc 2] [--bucket-cap-mb MB] [--json PATH]

For each library and model, every rank measures (median over ``--iters`` steps):
  compute  one local step without DDP (forward, backward, optimizer);
  comm     the all-reduce of the same gradient buckets, one after the other, alone;
  ddp      one DDP step (forward, backward with bucketed all-reduce, optimizer).
Overlap is visible when ddp < compute + comm: the buckets' all-reduces ran while backward
was still computing.  Ranks are started with ``mpiexec`` (torch's ranks too, reading their
rank from the MPI process manager), one BLAS thread each.
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

from benchmarks.workloads_nn import tiny_gpt


def _models(lib):
    """name -> (model, loss_fn(model)): the shapes of workloads_nn's MLP and tiny GPT."""
    nn = lib.nn
    F = nn.functional
    rng = np.random.default_rng(0)

    def data(shape, ints=None):
        if ints is not None:
            return lib.from_numpy(rng.integers(0, ints, size=shape).astype(np.int64))
        return lib.from_numpy(rng.standard_normal(shape).astype(np.float32))

    lib.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    xm, ym = data((128, 64)), data((128,), ints=10)

    d, heads, seq, batch, vocab = 128, 4, 64, 16, 96

    # communication-heavy: 17 MB of gradients for little compute, where overlap matters
    wide = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.ReLU())],
                         nn.Linear(1024, 10))
    xw, yw = data((32, 1024)), data((32,), ints=10)

    gpt = tiny_gpt(lib, d=d, heads=heads, seq=seq, vocab=vocab)
    xg, yg = data((batch, seq), ints=vocab), data((batch, seq), ints=vocab)
    return {
        "ddp_mlp_train_step": (mlp, lambda m: F.cross_entropy(m(xm), ym)),
        "ddp_wide_mlp_train_step": (wide, lambda m: F.cross_entropy(m(xw), yw)),
        "ddp_tiny_gpt_train_step": (gpt, lambda m: F.cross_entropy(m(xg).flatten(0, 1),
                                                                   yg.flatten())),
    }


def _interleaved(fns, iters, barrier):
    """Median time of each of ``fns``, run in turn every iteration (after 3 warm-ups)."""
    times = [[] for _ in fns]
    for it in range(iters + 3):
        for fn, ts in zip(fns, times):
            barrier()
            t0 = time.perf_counter()
            fn()
            if it >= 3:
                ts.append(time.perf_counter() - t0)
    return [statistics.median(ts) for ts in times]


def _bucket_sizes(lib, model, cap_mb):
    """The element counts of DDP's buckets (reverse order, 1 MiB first bucket)."""
    if lib.__name__ == "ember":
        from ember.nn.parallel._reducer import compute_bucket_assignment
        params = [p for p in model.parameters() if p.requires_grad]
        idx = compute_bucket_assignment(params, int(cap_mb * 2 ** 20), min(2 ** 20,
                                                                          int(cap_mb * 2 ** 20)))
        return [sum(params[i].numel() for i in b) for b in idx]
    return None


def rank_main(lib_name, iters, cap_mb):
    """One rank: measure compute, comm and DDP step for every model; rank 0 prints JSON."""
    if lib_name == "ember":
        import ember as lib
        import ember.distributed as dist
        from ember.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo")
    else:
        import torch as lib
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo", rank=int(os.environ["PMI_RANK"]),
                                world_size=int(os.environ["PMI_SIZE"]))
    lib.set_num_threads(1)
    rank = dist.get_rank()
    results = {}
    for name, (model, loss_fn) in _models(lib).items():
        opt = lib.optim.AdamW(model.parameters(), lr=1e-3)

        def local_step():
            opt.zero_grad()
            loss_fn(model).backward()
            opt.step()

        sizes = _bucket_sizes(lib, model, cap_mb)
        if sizes is None:  # torch: the same buckets as ember's (same rule, same model)
            import ember
            sizes = _bucket_sizes(ember, _models(ember)[name][0], cap_mb)
        bufs = [lib.zeros(n) for n in sizes]

        def comm():
            for b in bufs:
                dist.all_reduce(b)

        ddp = DDP(model, bucket_cap_mb=cap_mb)
        dopt = lib.optim.AdamW(ddp.parameters(), lr=1e-3)
        waits = []

        def ddp_step():
            dopt.zero_grad()
            loss_fn(ddp).backward()
            dopt.step()
            if hasattr(ddp, "reducer") and hasattr(ddp.reducer, "last_wait_s"):
                waits.append(ddp.reducer.last_wait_s)

        # interleaved, so that load changes on a shared machine hit all three alike
        compute, comm_t, ddp_t = _interleaved([local_step, comm, ddp_step], iters,
                                              dist.barrier)
        results[name] = {"compute_ms": compute * 1e3, "comm_ms": comm_t * 1e3,
                         "ddp_ms": ddp_t * 1e3, "buckets": len(sizes),
                         "params": sum(sizes)}
        if waits:
            results[name]["exposed_comm_ms"] = statistics.median(waits[3:] or waits) * 1e3
    # each rank's figures; report the slower rank (the step waits for it anyway)
    t = lib.tensor([[r[k] for k in ("compute_ms", "comm_ms", "ddp_ms")]
                    for r in results.values()], dtype=lib.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    for i, r in enumerate(results.values()):
        r["compute_ms"], r["comm_ms"], r["ddp_ms"] = (float(v) for v in t[i].tolist())
    if rank == 0:
        print("RESULT " + json.dumps(results), flush=True)
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(lib_name, nproc, iters, cap_mb, timeout=600):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    cmd = [mpiexec, "-n", str(nproc), sys.executable, "-m", "benchmarks.ddp", "--rank-program",
           lib_name, "--iters", str(iters), "--bucket-cap-mb", str(cap_mb)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=root)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{lib_name} ranks failed ({proc.returncode}):\n{proc.stdout}\n"
                       f"{proc.stderr[-4000:]}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--rank-program", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank_program:
        rank_main(args.rank_program, args.iters, args.bucket_cap_mb)
        return
    libs = ["ember"]
    try:
        import torch  # noqa: F401
        libs.append("torch")
    except ImportError:
        pass
    res = {lib: run(lib, args.nproc, args.iters, args.bucket_cap_mb) for lib in libs}
    print(f"DDP train step, {args.nproc} ranks, bucket_cap_mb={args.bucket_cap_mb}, "
          f"median of {args.iters} (ms; slowest rank)")
    head = f"{'workload':26s} {'lib':6s} {'compute':>8s} {'comm':>7s} {'serial':>8s} " \
           f"{'ddp':>8s} {'overlap':>8s} {'buckets':>7s}"
    print(head + "  exposed")
    for name in res["ember"]:
        for lib in libs:
            r = res[lib][name]
            serial = r["compute_ms"] + r["comm_ms"]
            print(f"{name:26s} {lib:6s} {r['compute_ms']:8.2f} {r['comm_ms']:7.2f} "
                  f"{serial:8.2f} {r['ddp_ms']:8.2f} {serial - r['ddp_ms']:8.2f} "
                  f"{r['buckets']:7d}  " +
                  (f"{r['exposed_comm_ms']:7.2f}" if "exposed_comm_ms" in r else "      -"))
        if "torch" in res:
            ratio = res["ember"][name]["ddp_ms"] / res["torch"][name]["ddp_ms"]
            print(f"{'':26s} ember/torch ddp step: {ratio:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nproc": args.nproc, "bucket_cap_mb": args.bucket_cap_mb,
                       "results": res}, f, indent=1)


if __name__ == "__main__":
    main()
