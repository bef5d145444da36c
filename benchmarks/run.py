"""Run the benchmark suite: every workload with ember and with torch (when installed)
in one process, measured with ``ember.utils.benchmark.Timer.blocked_autorange``,
printed as a Compare table with an ember/torch ratio column, and written as JSON.

    python -m benchmarks.run [--only NAME] [--quick] [--cpu-time] [--threads N|default]
                             [--json PATH]

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
import json
import os
import pkgutil
import platform
import re
import sys
import time

from ember.utils.benchmark import Compare, Timer

from .workloads import WORKLOADS

# every benchmarks/workloads_<area>.py registers more workloads on import
for _m in sorted(m.name for m in pkgutil.iter_modules([os.path.dirname(__file__)])
                 if m.name.startswith("workloads_")):
    importlib.import_module(f"{__package__}.{_m}")

NUM_THREADS = 1  # torch's Timer default: single-threaded compares intrinsic cost


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
    """One workload on one library at ``num_threads`` threads: a Measurement (sub_label =
    workload, description = library, label = group); ``clock``: the timer function
    (default: the Timer's wall clock)."""
    fn = WORKLOADS[name][1](lib)
    timer = Timer("fn()", globals={"fn": fn}, label=group, sub_label=name,
                  description=lib_name, num_threads=num_threads,
                  **({} if clock is None else {"timer": clock}))
    with _lib_threads(lib, num_threads):
        fn()  # first call outside the timer: builds/caches anything lazy
        return timer.blocked_autorange(min_run_time=min_run_time)


def _default_threads(libs):
    """Each library's intra-op thread count as found at start-up (before any run)."""
    return {name: lib.get_num_threads() for name, lib in libs
            if hasattr(lib, "get_num_threads")}


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


def _blas_info():
    """Each BLAS library's kernel set and the OPENBLAS_CORETYPE it was forced to, if any:
    OpenBLAS's kernels differ up to 2x in GEMM speed (Haswell against SkylakeX)."""
    try:
        from threadpoolctl import threadpool_info
        libs = [{k: i.get(k) for k in ("filepath", "version", "architecture")}
                for i in threadpool_info() if i.get("user_api") == "blas"]
    except Exception as e:  # noqa: BLE001 - only the report loses this field
        libs = f"{type(e).__name__}: {e}"
    from ember._core import cpu_capability
    return {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"), "libraries": libs,
            "cpu_capability": cpu_capability.detect()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append", help="run only this workload (repeatable)")
    p.add_argument("--quick", action="store_true", help="short measurements")
    p.add_argument("--json", default=None, help="where to write results (default "
                   "benchmarks/results/<time>.json)")
    p.add_argument("--cpu-time", action="store_true", help="measure this process's CPU "
                   "time instead of wall time (steady on a loaded machine; single-threaded "
                   "runs only, as it sums every thread's time)")
    p.add_argument("--threads", type=_thread_count, default=NUM_THREADS,
                   help="threads for both libraries: a count (default 1) or 'default' "
                   "(torch's default, torch.get_num_threads() at start-up)")
    args = p.parse_args(argv)
    if args.cpu_time and args.threads != 1:
        p.error(f"--cpu-time sums every thread's CPU time, so it measures 1 thread only "
                f"(got --threads {args.threads}); use wall time for more threads")
    clock = time.process_time if args.cpu_time else None

    import ember
    libs = [("ember", ember)]
    try:
        import torch
        libs.append(("torch", torch))
    except ImportError:
        print("torch is not installed: reporting ember times only", file=sys.stderr)
    defaults = _default_threads(libs)
    num_threads = args.threads
    if num_threads == "default":
        num_threads = defaults.get("torch", defaults["ember"])

    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced:  # a common container setting: it silently halves GEMM speed on AVX512 CPUs
        print(f"note: OPENBLAS_CORETYPE={forced} forces OpenBLAS's kernel set (this CPU: "
              f"{_blas_info()['cpu_capability']}); unset it to measure OpenBLAS's own choice",
              file=sys.stderr)

    names = args.only or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
    min_run_time = 0.2 if args.quick else 1.0

    rows, measurements = [], []
    for name in names:
        group = WORKLOADS[name][0]
        res = {"workload": name, "group": group}
        for lib_name, lib in libs:
            try:
                m = measure(name, group, lib_name, lib, min_run_time, clock, num_threads)
            except Exception as e:  # one broken workload must not hide the others
                print(f"{name} [{lib_name}] failed: {type(e).__name__}: {e}", file=sys.stderr)
                res[f"{lib_name}_error"] = f"{type(e).__name__}: {e}"
                continue
            measurements.append(m)
            res[lib_name] = m.median
            res[f"{lib_name}_stats"] = {"median": m.median, "mean": m.mean, "iqr": m.iqr,
                                        "number_per_run": m.number_per_run,
                                        "replicates": len(m.raw_times)}
        res["ratio"] = (res["ember"] / res["torch"]
                        if "ember" in res and "torch" in res else None)
        rows.append(res)
        print(f"  measured {name}", file=sys.stderr, flush=True)

    ratios = {r["workload"]: r["ratio"] for r in rows}
    for group in dict.fromkeys(m.label for m in measurements):  # one table per group
        compare = Compare([m for m in measurements if m.label == group])
        compare.highlight_warnings()
        print(_with_ratio_column(str(compare), ratios))

    out = args.json or os.path.join(os.path.dirname(__file__), "results",
                                    time.strftime("%Y%m%d-%H%M%S") + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "ember": ember.__version__,
            "torch": libs[1][1].__version__ if len(libs) > 1 else None,
            "num_threads": num_threads, "default_threads": defaults,
            "min_run_time": min_run_time,
            "clock": "cpu" if args.cpu_time else "wall", "blas": _blas_info()}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1)
    os.replace(tmp, out)
    print(f"results written to {out}")


if __name__ == "__main__":
    main()
