"""ember.compile against torch.compile (issue 18), in one run:

    python -m benchmarks.compile_capture [--quick] [--json PATH]

(a) overhead  per-call time, from the call to its result, of a compiled 20-op pointwise
              chain on 16 floats: ember eager, ember.compile with the backends "eager" and
              "inductor" (each with the replay fast path on and off:
              ``ember._dynamo.config.replay``), torch eager, torch.compile ("inductor").
(b) capture   what capture costs per captured op, on a 200-op chain: ember runs the
              user's Python on every call that cannot be replayed, so its recurring cost
              is (a cache-hit call with replay off - the compiled graph alone) / 200
              (recording plus keying plus the flush); the one-time cost is the first
              call minus a later one (capture, graph building and the backend).  torch's
              capture is Dynamo's bytecode tracing: the first call of
              ``torch.compile(backend="eager")`` minus a later one, per op.
(c) training  one MLP training step (the ``mlp_train_step`` workload of workloads_nn:
              64-256-10, Adam, batch 128): eager, the model compiled, the whole step
              compiled (one graph with its backward and the Adam update, replayed; and,
              for comparison, with ``config.capture_backward=False``: graph breaks at
              backward() and at the update), for both libraries.
(d) dropout   one training step of the benchmark GPT (workloads_nn.tiny_gpt: 4 blocks,
              d 128, batch 16 x 64 tokens, AdamW) with dropout 0.1 after the embedding,
              in attention and after the MLP: eager, the whole step compiled (its draws
              are graph nodes, so the step replays), for both libraries.

Times are medians of ``ember.utils.benchmark.Timer.blocked_autorange``; every library
runs at its default thread count (torch's intra-op pool is left alone) unless
``--threads N`` sets both; ``--cpu-time`` measures the process's CPU time instead of wall
time (on a shared machine, with ``--threads 1``, the figure that does not depend on load).  The load average is printed with the tables: on a busy machine
torch's spinning OpenMP pool is many times slower at its default than at one thread.  Ratios are
against the torch.compile row of each table.  A variant that fails prints its error and
the others still run.
"""
import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

from ember.utils.benchmark import Timer

CHAIN_OPS = 20
CAPTURE_OPS = 200
ROWS = []  # every measurement: dict(table, variant, seconds, error, note)
CLOCK = [time.perf_counter]  # what median_time measures (--cpu-time: time.process_time)


# ---- workloads ----------------------------------------------------------------------------
def pointwise_chain(n_ops):
    """A function of one tensor applying ``n_ops`` pointwise ops (mul, add, sin, relu...)."""
    def chain(x):
        for i in range(n_ops // 4):
            x = x * 1.01
            x = x + 0.5
            x = x.sin()
            x = x.relu()
        for _ in range(n_ops % 4):
            x = x * 0.99
        return x
    return chain


def _tensor(lib, shape, seed=0, ints=None):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, ints, size=shape).astype(np.int64) if ints is not None else \
        rng.standard_normal(shape).astype(np.float32)
    return lib.from_numpy(a)


def mlp_training(lib, how, backend="inductor"):
    """One MLP training step as a zero-argument callable; ``how``: "eager", "model"
    (the model compiled) or "step" (the whole step compiled)."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _tensor(lib, (128, 64)), _tensor(lib, (128,), ints=10)
    fwd = lib.compile(model, backend=backend) if how == "model" else model

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(fwd(x), y)
        loss.backward()
        opt.step()
        return loss
    return lib.compile(step, backend=backend) if how == "step" else step


# ---- measuring ----------------------------------------------------------------------------
def _threads():
    import torch
    return torch.get_num_threads()


def set_threads(n):
    """Both libraries at ``n`` threads (torch's intra-op pool; ember's and NumPy's pools)."""
    import torch

    from ember._core.threads import set_num_threads
    torch.set_num_threads(n)
    set_num_threads(n)


def median_time(fn, min_run_time, label):
    """Median seconds per call of ``fn`` (after one warm-up call)."""
    fn()
    timer = Timer("fn()", globals={"fn": fn}, label=label, num_threads=_threads(),
                  timer=CLOCK[0])
    return timer.blocked_autorange(min_run_time=min_run_time).median


def record(table, variant, make, min_run_time, note=""):
    """Measure ``make()``'s callable; a failure is recorded, not raised."""
    row = {"table": table, "variant": variant, "seconds": None, "error": None, "note": note}
    try:
        row["seconds"] = median_time(make(), min_run_time, table)
    except Exception as e:  # one broken variant must not hide the others
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        print(f"{table} / {variant} failed: {row['error']}", file=sys.stderr)
    ROWS.append(row)
    print(f"  measured {table} / {variant}", file=sys.stderr, flush=True)
    return row


@contextlib.contextmanager
def replay(on):
    from ember._dynamo import config
    prior = config.replay
    config.replay = on
    try:
        yield
    finally:
        config.replay = prior


def _with_replay(make, on):
    """``make()``'s callable run with ``config.replay`` set to ``on`` on every call."""
    def build():
        with replay(on):
            fn = make()

        def call():
            with replay(on):
                return fn()
        return call
    return build


def _with_setting(name, value, make):
    """``make()``'s callable run with ``ember._dynamo.config.<name>`` set to ``value``."""
    from ember._dynamo import config

    def build():
        with config.patch(name, value):
            fn = make()

        def call():
            with config.patch(name, value):
                return fn()
        return call
    return build


# ---- (a) per-call overhead ----------------------------------------------------------------
def bench_overhead(min_run_time):
    import torch

    import ember
    chain = pointwise_chain(CHAIN_OPS)
    table = f"(a) per-call time, {CHAIN_OPS}-op pointwise chain on 16 floats"
    ex, tx = _tensor(ember, (16,)), _tensor(torch, (16,))

    def compiled(lib, backend):
        def make():
            lib._dynamo.reset()
            fn = lib.compile(chain, backend=backend)
            x = ex if lib is ember else tx
            return lambda: fn(x)
        return make

    record(table, "ember eager", lambda: (lambda: chain(ex)), min_run_time)
    for backend in ("eager", "inductor"):
        for on in (True, False):
            path = "replay fast path" if on else "Python runs every call"
            record(table, f"ember.compile {backend} ({path})",
                   _with_replay(compiled(ember, backend), on), min_run_time)
    record(table, "torch eager", lambda: (lambda: chain(tx)), min_run_time)
    record(table, "torch.compile inductor", compiled(torch, "inductor"), min_run_time)


# ---- (b) capture time per captured op -----------------------------------------------------
def _first_and_later(fn, x, repeats):
    t0 = time.perf_counter()
    fn(x)
    first = time.perf_counter() - t0
    later = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(x)
        later.append(time.perf_counter() - t0)
    return first, statistics.median(later)


def _graph_alone(compiled, x):
    """The compiled graph of ``compiled``'s only cache entry, called on ``x`` directly."""
    entries = list(compiled.cache.entries.values())
    if len(entries) != 1:
        raise RuntimeError(f"expected one compiled graph, found {len(entries)}")
    run = entries[0].run
    return lambda: run(x)


def bench_capture(min_run_time):
    import torch

    import ember
    chain = pointwise_chain(CAPTURE_OPS)
    n = CAPTURE_OPS
    table = f"(b) capture, {n}-op pointwise chain on 16 floats (per captured op)"
    ex, tx = _tensor(ember, (16,)), _tensor(torch, (16,))
    repeats = 20 if min_run_time < 1 else 100
    for backend in ("eager", "inductor"):
        try:
            with replay(False):
                ember._dynamo.reset()
                fn = ember.compile(chain, backend=backend)
                first, later = _first_and_later(fn, ex, repeats)
                call = median_time(lambda: fn(ex), min_run_time, table)
            graph = median_time(_graph_alone(fn, ex), min_run_time, table)
        except Exception as e:
            msg = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            print(f"{table} / ember {backend} failed: {msg}", file=sys.stderr)
            ROWS.append({"table": table, "variant": f"ember.compile {backend}", "seconds": None,
                         "error": msg, "note": ""})
            continue
        if backend == "eager":
            ROWS.append({"table": table, "variant": "ember capture every call (record + key "
                         "+ flush)", "seconds": (call - graph) / n, "error": None,
                         "note": f"call {call * 1e6:.0f} us - graph {graph * 1e6:.0f} us"})
        ROWS.append({"table": table, "variant": f"ember first call - later, {backend}",
                     "seconds": (first - later) / n, "error": None,
                     "note": f"first {first * 1e3:.1f} ms, later {later * 1e6:.0f} us"})
    try:
        torch._dynamo.reset()
        fn = torch.compile(chain, backend="eager")
        first, later = _first_and_later(fn, tx, repeats)
        ROWS.append({"table": table, "variant": "torch.compile capture (Dynamo, backend "
                     "eager) first call - later", "seconds": (first - later) / n,
                     "error": None, "note": f"first {first * 1e3:.1f} ms, later "
                     f"{later * 1e6:.0f} us"})
    except Exception as e:
        ROWS.append({"table": table, "variant": "torch.compile capture", "seconds": None,
                     "error": f"{type(e).__name__}: {e}", "note": ""})


# ---- (c) MLP training step ----------------------------------------------------------------
def _fresh(workload):
    """``make(lib, how, backend)``: a builder of ``workload(lib, how, backend)``'s callable,
    made after the library's compile caches are reset."""
    def make(lib, how, backend="inductor"):
        def build():
            lib._dynamo.reset()
            return workload(lib, how, backend)
        return build
    return make


def bench_training(min_run_time):
    import torch

    import ember
    table = "(c) MLP training step (64-256-10, Adam, batch 128)"
    make = _fresh(mlp_training)
    record(table, "ember eager", make(ember, "eager"), min_run_time)
    for backend in ("eager", "inductor"):
        record(table, f"ember.compile(model) {backend}", make(ember, "model", backend),
               min_run_time)
        record(table, f"ember.compile(step) {backend}", make(ember, "step", backend),
               min_run_time)
        # the step as it ran before backward() was recorded into the graph: graph breaks
        # at backward() and at the update, the Python every call
        record(table, f"ember.compile(step) {backend}, backward() a graph break",
               _with_setting("capture_backward", False, make(ember, "step", backend)),
               min_run_time)
    record(table, "torch eager", make(torch, "eager"), min_run_time)
    record(table, "torch.compile(model) inductor", make(torch, "model"), min_run_time)
    record(table, "torch.compile(step) inductor", make(torch, "step"), min_run_time)


# ---- (d) GPT training step with dropout ---------------------------------------------------
def gpt_dropout_training(lib, how, backend="inductor", dropout=0.1):
    """One training step of the benchmark GPT with dropout, as a zero-argument callable;
    ``how``: "eager" or "step" (the whole step compiled)."""
    from .workloads_nn import tiny_gpt
    seq, batch, vocab = 64, 16, 96
    lib.manual_seed(0)
    model = tiny_gpt(lib, seq=seq, vocab=vocab, dropout=dropout)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = _tensor(lib, (batch, seq), ints=vocab), _tensor(lib, (batch, seq), 1, ints=vocab)
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        return loss
    return lib.compile(step, backend=backend) if how == "step" else step


def bench_dropout(min_run_time):
    import torch

    import ember
    table = "(d) GPT training step with dropout 0.1 (4 blocks, d 128, 16 x 64 tokens, AdamW)"
    make = _fresh(gpt_dropout_training)
    record(table, "ember eager", make(ember, "eager"), min_run_time)
    for backend in ("eager", "inductor"):
        record(table, f"ember.compile(step) {backend}", make(ember, "step", backend),
               min_run_time)
        record(table, f"ember.compile(step) {backend}, Python every call",
               _with_replay(make(ember, "step", backend), False), min_run_time)
    record(table, "torch eager", make(torch, "eager"), min_run_time)
    record(table, "torch.compile(step) inductor", make(torch, "step"), min_run_time)


# ---- report -------------------------------------------------------------------------------
def _reference(rows):
    """The torch.compile row a table's ratios are against."""
    for r in rows:
        if r["variant"].startswith("torch.compile") and r["seconds"]:
            return r["seconds"]
    return None


def print_tables(rows):
    for table in dict.fromkeys(r["table"] for r in rows):
        part = [r for r in rows if r["table"] == table]
        ref = _reference(part)
        width = max(len(r["variant"]) for r in part)
        print(f"\n{table}")
        print(f"  {'variant'.ljust(width)}  {'time (us)':>11}  {'/ torch.compile':>15}")
        for r in part:
            if r["seconds"] is None:
                cells = f"{'failed':>11}  {'-':>15}  {r['error']}"
            else:
                ratio = f"{r['seconds'] / ref:.2f}x" if ref else "-"
                cells = f"{r['seconds'] * 1e6:11.2f}  {ratio:>15}" + \
                        (f"  {r['note']}" if r["note"] else "")
            print(f"  {r['variant'].ljust(width)}  {cells}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="short measurements")
    p.add_argument("--only", choices=("overhead", "capture", "training", "dropout"),
                   action="append", help="run only this part (repeatable)")
    p.add_argument("--cpu-time", action="store_true",
                   help="measure process CPU time rather than wall time")
    p.add_argument("--threads", type=int, default=None,
                   help="run both libraries at this many threads (default: torch's default)")
    p.add_argument("--json", default=None, help="where to write results (default "
                   "benchmarks/results/compile_capture-<time>.json)")
    args = p.parse_args(argv)
    try:
        import torch
    except ImportError:
        sys.exit("benchmarks.compile_capture compares with torch: install it (dev extra)")
    import ember
    min_run_time = 0.2 if args.quick else 1.0
    if args.threads:
        set_threads(args.threads)
    if args.cpu_time:
        CLOCK[0] = time.process_time
    parts = {"overhead": bench_overhead, "capture": bench_capture,
             "training": bench_training, "dropout": bench_dropout}
    for name in args.only or parts:
        parts[name](min_run_time)
    load = os.getloadavg()
    print(f"\n{os.cpu_count()} CPUs, torch at {torch.get_num_threads()} threads, "
          f"{'CPU' if args.cpu_time else 'wall'} time, load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print_tables(ROWS)
    out = args.json or os.path.join(os.path.dirname(__file__), "results",
                                    time.strftime("compile_capture-%Y%m%d-%H%M%S.json"))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "ember": ember.__version__, "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "min_run_time": min_run_time,
            "clock": "process_time" if args.cpu_time else "perf_counter",
            "load_average": os.getloadavg()}
    with open(out + ".tmp", "w") as f:
        json.dump({"meta": meta, "results": ROWS}, f, indent=1)
    os.replace(out + ".tmp", out)
    print(f"\nresults written to {out}")


if __name__ == "__main__":
    main()
