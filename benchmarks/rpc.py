"""RPC on 2 workers: ember.distributed.rpc (MPI point-to-point) against torch's RPC
(TensorPipe) in the same run.

    python -m benchmarks.rpc [--iters 300] [--big-iters 20] [--rounds 3] [--json PATH]

Worker 0 calls ``rpc_sync`` on worker 1 (both started by ``mpiexec -n 2``; torch's workers
read their rank from the MPI process manager).  Figures: ``latency_us``, the median
round trip of an echo of a 4-element float32 tensor; ``send_mib_s``, a 16 MiB float32
tensor sent to a function returning its element count (16 MiB over the median round trip);
``echo_mib_s``, the same tensor sent and returned (32 MiB moved per call).  The libraries
alternate for ``--rounds`` rounds (ember, torch, ember, ...) and each figure is the median
over rounds, so load changes on a shared machine hit both alike.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

BIG = 4 * 2 ** 20          # float32 elements: 16 MiB


def echo(t):
    return t


def numel(t):
    return t.numel()


def _timed(rpc, fn, arg, iters):
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        out = rpc.rpc_sync("worker1", fn, args=(arg,))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def rank_main(lib_name, iters, big_iters, port):
    rank, world = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
    if lib_name == "ember":
        import ember as lib
        import ember.distributed.rpc as rpc
        opts = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}")
    else:
        import torch as lib
        import torch.distributed.rpc as rpc
        opts = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}")
    lib.set_num_threads(1)
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world, rpc_backend_options=opts)
    if rank == 0:
        small = lib.ones(4)
        big = lib.ones(BIG)
        _timed(rpc, echo, small, 20)                       # warm-up: connections, caches
        _timed(rpc, numel, big, 2)
        lat, out = _timed(rpc, echo, small, iters)
        assert out.tolist() == [1.0] * 4
        send, n = _timed(rpc, numel, big, big_iters)
        assert n == BIG
        echo_t, back = _timed(rpc, echo, big, big_iters)
        assert back.shape == big.shape and float(back[-1]) == 1.0
        mib = BIG * 4 / 2 ** 20
        print("RESULT " + json.dumps({"latency_us": lat * 1e6, "send_mib_s": mib / send,
                                      "echo_mib_s": 2 * mib / echo_t}), flush=True)
    rpc.shutdown()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(lib_name, iters, big_iters, timeout=600):
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    port = _free_port()
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               TP_SOCKET_IFNAME="lo")
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "benchmarks.rpc", "--rank-program",
           lib_name, "--iters", str(iters), "--big-iters", str(big_iters), "--port", str(port)]
    cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=cwd)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{lib_name} workers failed ({proc.returncode}):\n{proc.stdout}\n"
                       f"{proc.stderr[-4000:]}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=300, help="small-tensor calls per round")
    p.add_argument("--big-iters", type=int, default=20, help="16 MiB calls per round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="write the figures to this file")
    p.add_argument("--rank-program", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank_program:
        rank_main(args.rank_program, args.iters, args.big_iters, args.port)
        return
    libs = ["ember"]
    try:
        import torch  # noqa: F401
        libs.append("torch")
    except ImportError:
        pass
    rounds = {lib: [] for lib in libs}
    errors = {}
    for _ in range(args.rounds):
        for lib in list(libs):
            try:
                rounds[lib].append(run(lib, args.iters, args.big_iters))
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                if lib == "ember":
                    raise
                errors[lib] = str(e)[-2000:]       # report torch's failure, keep ember's
                libs.remove(lib)
    res = {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for lib, rs in rounds.items() if rs}
    print(f"RPC, 2 workers, rpc_sync, median of {args.rounds} alternating rounds")
    print(f"{'lib':6s} {'latency us':>11s} {'send MiB/s':>11s} {'echo MiB/s':>11s}")
    for lib, r in res.items():
        print(f"{lib:6s} {r['latency_us']:11.1f} {r['send_mib_s']:11.1f} "
              f"{r['echo_mib_s']:11.1f}")
    if "torch" in res:
        e, t = res["ember"], res["torch"]
        print(f"ember/torch: latency {e['latency_us'] / t['latency_us']:.2f}x, send throughput "
              f"{e['send_mib_s'] / t['send_mib_s']:.2f}x, echo throughput "
              f"{e['echo_mib_s'] / t['echo_mib_s']:.2f}x")
    for lib, err in errors.items():
        print(f"{lib} RPC could not run here:\n{err}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": res, "rounds": rounds, "errors": errors}, f, indent=1)


if __name__ == "__main__":
    main()
