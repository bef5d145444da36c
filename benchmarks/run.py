"""Run the benchmark suite: every workload with ember and with torch (when installed),
measured with each library's ``utils.benchmark.Timer.blocked_autorange``, printed as Compare
tables with an ember/torch ratio column, and written as JSON.

    python -m benchmarks.run [--only NAME] [--quick] [--cpu-time] [--threads N|default]
                             [--json PATH] [--same-process]

Each library runs in its own worker process (``python -m benchmarks.run --worker LIB``),
one after the other, and no worker imports the other library: torch loads its own OpenMP
runtime, and ember's C kernels, which ask for ``libgomp.so.1`` by name, would otherwise bind
to it and inherit its spinning workers (a tiny GPT step at 2 threads: ~70 ms alone, ~150 ms
after ``import torch``).  The parent gathers the workers' raw times as ember Measurements.
``--same-process`` measures both libraries in this process instead (the old mode).
The JSON's ``meta.isolation`` records the mode and, per worker, the libraries it had
imported and the OpenMP runtimes it had loaded.

Both libraries run at the same thread count: 1 by default (torch's Timer default:
single-threaded compares intrinsic cost), ``--threads N``, or ``--threads default`` for
torch's own default (``torch.get_num_threads()`` at start-up, the machine's cores), which is
what a user gets without calling ``set_num_threads``.  The JSON's ``meta.num_threads``
records the count, ``meta.default_threads`` each library's default.

ember's GEMMs are NumPy's and SciPy's OpenBLAS, whose kernel set follows the CPU unless
``OPENBLAS_CORETYPE`` forces one: ``Haswell`` (AVX2) on an AVX512 CPU halves float32 GEMM
throughput against ``SkylakeX``, while torch's convolutions (oneDNN) keep AVX512.  The
JSON's ``meta.blas`` records the variable and each library's kernel set.
"""
import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import pkgutil
import platform
import re
import subprocess
import sys
import tempfile
import time

from .workloads import WORKLOADS

# every benchmarks/workloads_<area>.py registers more workloads on import
for _m in sorted(m.name for m in pkgutil.iter_modules([os.path.dirname(__file__)])
                 if m.name.startswith("workloads_")):
    importlib.import_module(f"{__package__}.{_m}")

NUM_THREADS = 1  # torch's Timer default: single-threaded compares intrinsic cost
LIBRARIES = ("ember", "torch")


@contextlib.contextmanager
def _lib_threads(lib, n):
    # Timer limits NumPy/BLAS/OpenMP pools; torch's intra-op pool has its own knob
    get_n, set_n = getattr(lib, "get_num_threads", None), getattr(lib, "set_num_threads", None)
    prior = get_n() if get_n and set_n else None
    if prior is not None:
        set_n(n)
    try:
        yield
    finally:
        if prior is not None:
            set_n(prior)


def measure(name, group, lib_name, lib, min_run_time, clock=None, num_threads=NUM_THREADS):
    """One workload on one library at ``num_threads`` threads, timed by that library's own
    ``utils.benchmark.Timer``: a Measurement (sub_label = workload, description = library,
    label = group); ``clock``: the timer function (default: the Timer's wall clock)."""
    fn = WORKLOADS[name][1](lib)
    Timer = importlib.import_module(f"{lib.__name__}.utils.benchmark").Timer
    timer = Timer("fn()", globals={"fn": fn}, label=group, sub_label=name,
                  description=lib_name, num_threads=num_threads,
                  **({} if clock is None else {"timer": clock}))
    with _lib_threads(lib, num_threads):
        fn()  # first call outside the timer: builds/caches anything lazy
        return timer.blocked_autorange(min_run_time=min_run_time)


def _thread_count(value):
    if value == "default":
        return value
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'default', got "
                                         f"{value!r}")
    return n


def _with_ratio_column(table, ratios):
    """Append an ember/torch column to one rendered Compare table."""
    lines = table.split("\n")
    rows = {i: name for i, line in enumerate(lines) for name in ratios
            if line.startswith("  ") and line.split("|")[0].strip() == name}
    if not rows:
        return table
    head = "ember/torch"
    width = len(head)
    out = []
    for i, line in enumerate(lines):
        if i == 1:
            line += "  |  " + head
        elif i in rows:
            r = ratios[rows[i]]
            line += "  |  " + (f"{r:.2f}x" if r is not None else "-").rjust(width)
        elif re.fullmatch(r"\d+ threads: -*", line):
            line += "-" * (width + 5)
        out.append(line)
    return "\n".join(out)


def _loaded_libraries():
    """BLAS and OpenMP runtimes loaded in this process (threadpoolctl's view)."""
    try:
        from threadpoolctl import threadpool_info
        info = threadpool_info()
    except Exception as e:  # noqa: BLE001 - only the report loses these fields
        return f"{type(e).__name__}: {e}", []
    blas = [{k: i.get(k) for k in ("filepath", "version", "architecture")}
            for i in info if i.get("user_api") == "blas"]
    return blas, [i.get("filepath") for i in info if i.get("user_api") == "openmp"]


def run_library(lib_name, names, min_run_time, clock, num_threads):
    """Measure ``names`` with one library in this process.  Returns the library's record
    (version, default threads, loaded BLAS/OpenMP runtimes, which of ember/torch this
    process had imported) and, per workload, its Measurement as plain data (raw times and
    task fields, so neither library's classes are needed to read it) or its error text."""
    lib = importlib.import_module(lib_name)
    default = lib.get_num_threads()  # before anything sets it
    n = default if num_threads == "default" else num_threads
    results = {}
    for name in names:
        try:
            results[name] = _measurement_dict(measure(name, WORKLOADS[name][0], lib_name,
                                                      lib, min_run_time, clock, n))
        except Exception as e:  # one broken workload must not hide the others
            print(f"{name} [{lib_name}] failed: {type(e).__name__}: {e}", file=sys.stderr)
            results[name] = f"{type(e).__name__}: {e}"
        print(f"  measured {name} [{lib_name}]", file=sys.stderr, flush=True)
    blas, openmp = _loaded_libraries()
    record = {"version": lib.__version__, "default_threads": default, "num_threads": n,
              "pid": os.getpid(), "imported": [m for m in LIBRARIES if m in sys.modules],
              "blas": blas, "openmp": openmp}
    return record, results


def _measurement_dict(m):
    return {"number_per_run": m.number_per_run, "raw_times": list(m.raw_times),
            **{k: getattr(m.task_spec, k) for k in ("stmt", "setup", "label", "sub_label",
                                                    "description", "num_threads")}}


def _measurement(d):
    from ember.utils.benchmark import Measurement
    from ember.utils.benchmark.common import TaskSpec
    spec = TaskSpec(**{k: d[k] for k in ("stmt", "setup", "label", "sub_label",
                                         "description", "num_threads")})
    return Measurement(number_per_run=d["number_per_run"], raw_times=d["raw_times"],
                       task_spec=spec)


def _worker(lib_name, names, min_run_time, cpu_time, num_threads, path):
    """``--worker LIB``: measure with LIB alone; raw times and the record go to
    ``--worker-out`` as JSON (plain data, so the parent needs neither library's classes)."""
    record, results = run_library(lib_name, names, min_run_time,
                                  time.process_time if cpu_time else None, num_threads)
    with open(path, "w") as f:
        json.dump({"record": record, "results": results}, f)


def _isolated(lib_name, names, min_run_time, cpu_time, num_threads):
    """Run one library's worker process to completion; what its ``run_library`` returned."""
    fd, path = tempfile.mkstemp(suffix=".json", prefix=f"bench-{lib_name}-")
    os.close(fd)
    try:
        cmd = [sys.executable, "-m", f"{__package__}.run", "--worker", lib_name,
               "--worker-out", path, "--min-run-time", repr(min_run_time),
               "--threads", str(num_threads)] + [a for n in names for a in ("--only", n)]
        if cpu_time:
            cmd.append("--cpu-time")
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        proc = subprocess.run(cmd, cwd=root, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"the {lib_name} worker exited with status {proc.returncode}")
        with open(path) as f:
            data = json.load(f)
    finally:
        os.unlink(path)
    return data["record"], data["results"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", help="run only this workload (repeatable)")
    p.add_argument("--quick", action="store_true", help="short measurements")
    p.add_argument("--json", default=None, help="where to write results (default "
                   "benchmarks/results/<time>.json)")
    p.add_argument("--cpu-time", action="store_true", help="measure the process's CPU "
                   "time instead of wall time (steady on a loaded machine; single-threaded "
                   "runs only, as it sums every thread's time)")
    p.add_argument("--threads", type=_thread_count, default=NUM_THREADS,
                   help="threads for both libraries: a count (default 1) or 'default' "
                   "(torch's default, torch.get_num_threads() at start-up)")
    p.add_argument("--same-process", action="store_true", help="measure both libraries in "
                   "this process (by default each runs in a process of its own: torch's "
                   "OpenMP runtime would otherwise serve ember's C kernels too)")
    # the parent's arguments to a worker process
    p.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    p.add_argument("--worker-out", help=argparse.SUPPRESS)
    p.add_argument("--min-run-time", type=float, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cpu_time and args.threads != 1:
        p.error(f"--cpu-time sums every thread's CPU time, so it measures 1 thread only "
                f"(got --threads {args.threads}); use wall time for more threads")
    names = args.only or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
    min_run_time = args.min_run_time or (0.2 if args.quick else 1.0)
    if args.worker:
        return _worker(args.worker, names, min_run_time, args.cpu_time, args.threads,
                       args.worker_out)

    forced = os.environ.get("OPENBLAS_CORETYPE")
    from ember._core import cpu_capability
    capability = cpu_capability.detect()
    if forced:  # a common container setting: it silently halves GEMM speed on AVX512 CPUs
        print(f"note: OPENBLAS_CORETYPE={forced} forces OpenBLAS's kernel set (this CPU: "
              f"{capability}); unset it to measure OpenBLAS's own choice", file=sys.stderr)

    libs = ["ember"]
    if importlib.util.find_spec("torch") is not None:
        libs.insert(0, "torch")  # first: 'default' threads means torch's start-up count
    else:
        print("torch is not installed: reporting ember times only", file=sys.stderr)
    num_threads = args.threads
    records, results = {}, {}
    for lib_name in libs:
        if args.same_process:
            clock = time.process_time if args.cpu_time else None
            rec, res = run_library(lib_name, names, min_run_time, clock, num_threads)
        else:
            rec, res = _isolated(lib_name, names, min_run_time, args.cpu_time, num_threads)
        records[lib_name] = rec
        results[lib_name] = {k: v if isinstance(v, str) else _measurement(v)
                             for k, v in res.items()}
        num_threads = rec["num_threads"]  # 'default' resolved by the first library
    libs.reverse()  # ember's column and rows first, as always

    rows, measurements = [], []
    for name in names:
        res = {"workload": name, "group": WORKLOADS[name][0]}
        for lib_name in libs:
            m = results[lib_name][name]
            if isinstance(m, str):
                res[f"{lib_name}_error"] = m
                continue
            measurements.append(m)
            res[lib_name] = m.median
            res[f"{lib_name}_stats"] = {"median": m.median, "mean": m.mean, "iqr": m.iqr,
                                        "number_per_run": m.number_per_run,
                                        "replicates": len(m.raw_times)}
        res["ratio"] = (res["ember"] / res["torch"]
                        if "ember" in res and "torch" in res else None)
        rows.append(res)

    from ember.utils.benchmark import Compare
    ratios = {r["workload"]: r["ratio"] for r in rows}
    for group in dict.fromkeys(m.label for m in measurements):  # one table per group
        compare = Compare([m for m in measurements if m.label == group])
        compare.highlight_warnings()
        print(_with_ratio_column(str(compare), ratios))

    out = args.json or os.path.join(os.path.dirname(__file__), "results",
                                    time.strftime("%Y%m%d-%H%M%S") + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    blas_libs = {}
    for rec in records.values():
        for lib in rec["blas"] if isinstance(rec["blas"], list) else []:
            blas_libs.setdefault(lib["filepath"], lib)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(),
            **{lib: records[lib]["version"] if lib in records else None for lib in LIBRARIES},
            "num_threads": num_threads,
            "default_threads": {lib: rec["default_threads"] for lib, rec in records.items()},
            "min_run_time": min_run_time,
            "clock": "cpu" if args.cpu_time else "wall",
            "blas": {"OPENBLAS_CORETYPE": forced, "libraries": list(blas_libs.values()),
                     "cpu_capability": capability},
            "isolation": {"mode": "same-process" if args.same_process else "process",
                          "workers": {lib: {k: rec[k] for k in ("pid", "imported", "openmp")}
                                      for lib, rec in records.items()}}}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1)
    os.replace(tmp, out)
    print(f"results written to {out}")


if __name__ == "__main__":
    main()
