"""Run the benchmark suite: every workload with ember and with torch (when installed)
in one process, printing times and the ember/torch ratio, and writing JSON.

    python -m benchmarks.run [--only NAME] [--quick] [--json PATH]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import importlib
import pkgutil

from .workloads import WORKLOADS

# every benchmarks/workloads_<area>.py registers more workloads on import
for _m in sorted(m.name for m in pkgutil.iter_modules([os.path.dirname(__file__)])
                 if m.name.startswith("workloads_")):
    importlib.import_module(f"{__package__}.{_m}")


def measure(fn, min_time):
    """Median per-call time (s) over blocks of calls sized to take ~min_time/10 each."""
    fn()  # warm-up (also compiles/caches anything lazy)
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt > min_time / 10 or number > 1e6:
            break
        number *= 10
    times = [dt / number]
    deadline = time.perf_counter() + min_time
    while time.perf_counter() < deadline or len(times) < 5:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def _fmt(t):
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:8.2f} {unit}"
    return f"{t / 1e-9:8.1f} ns"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--only", action="append", help="run only this workload (repeatable)")
    p.add_argument("--quick", action="store_true", help="short measurements")
    p.add_argument("--json", default=None, help="where to write results (default "
                   "benchmarks/results/<time>.json)")
    args = p.parse_args(argv)

    import ember
    libs = [("ember", ember)]
    try:
        import torch
        libs.append(("torch", torch))
    except ImportError:
        print("torch is not installed: reporting ember times only", file=sys.stderr)

    names = args.only or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; known: {sorted(WORKLOADS)}")
    min_time = 0.2 if args.quick else 1.0
    rows = []
    print(f"{'workload':<24}{'group':<11}{'ember':>12}{'torch':>12}{'ratio':>8}")
    for name in names:
        group, build = WORKLOADS[name]
        res = {"workload": name, "group": group}
        for lib_name, lib in libs:
            res[lib_name] = measure(build(lib), min_time)
        ratio = res["ember"] / res["torch"] if "torch" in res else None
        res["ratio"] = ratio
        rows.append(res)
        print(f"{name:<24}{group:<11}{_fmt(res['ember']):>12}"
              f"{_fmt(res['torch']) if 'torch' in res else '-':>12}"
              f"{f'{ratio:7.2f}x' if ratio else '-':>8}", flush=True)
    out = args.json or os.path.join(os.path.dirname(__file__), "results",
                                    time.strftime("%Y%m%d-%H%M%S") + ".json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "ember": ember.__version__,
            "torch": libs[1][1].__version__ if len(libs) > 1 else None}
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"meta": meta, "results": rows}, f, indent=1)
    os.replace(tmp, out)
    print(f"results written to {out}")


if __name__ == "__main__":
    main()
