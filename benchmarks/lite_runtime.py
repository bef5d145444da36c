"""The lite runtime against full ember and torch (issue 12), in one run:

    python -m benchmarks.lite_runtime [--repeat N] [--json PATH]

(a) import    seconds to import the package, in a fresh interpreter each time (the median
              of ``--repeat`` runs): ``import ember_lite`` vs ``import ember`` vs
              ``import torch``.
(b) memory    peak resident memory (``VmHWM``, else ``ru_maxrss``) of a fresh process
              that imports the package, loads a saved program (an MLP 64-256-256-10 with LayerNorm and GELU,
              exported with a dynamic batch) and runs it once on a batch of 32: ember_lite
              (``ember_lite.load``), ember (``ember.export.load(...).module()``), torch
              (``torch.export.load(...).module()`` of the same model exported by torch).
(c) run       the median time of one call of the loaded program in that process.
(d) disk      the size of the package's directory on disk (``__pycache__`` excluded).
(e) C path    ember_lite runs a program as one generated C function where a compiler is
              there (``ember_lite`` rows) or on its NumPy kernels (``EMBER_LITE_C=0``: the
              ``ember_lite_numpy`` rows); (a)-(c) are measured for both, and for an MLP
              and a small CNN at batch 2, 32 and 256 the CPU time of one call
              (``time.process_time``, one BLAS thread, the median of 5 rounds), and the
              load time with an empty cache (generating and compiling the C) and with a
              warm one.

Each runtime runs in its own subprocess, so one's imports never count for another; each
uses its default thread count unless ``--threads N`` sets all (on a busy machine torch's
spinning OpenMP pool makes a small run many times slower at its default).
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

_IMPORT = "import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"

_RUN = {
    "ember_lite": """
        import ember_lite, numpy as np
        prog = ember_lite.load({path!r})
        x = np.load({x!r})
        run = lambda: prog(x)[0]
    """,
    "ember_lite_numpy": """
        import os; os.environ["EMBER_LITE_C"] = "0"
        import ember_lite, numpy as np
        prog = ember_lite.load({path!r})
        x = np.load({x!r})
        run = lambda: prog(x)[0]
    """,
    "ember": """
        import ember, numpy as np
        from ember.export import load
        mod = load({path!r}).module()
        x = ember.from_numpy(np.load({x!r}))
        def run():
            with ember.no_grad():
                return mod(x).numpy()
    """,
    "torch": """
        import torch, numpy as np
        mod = torch.export.load({path!r}).module()
        x = torch.from_numpy(np.load({x!r}))
        def run():
            with torch.no_grad():
                return mod(x).numpy()
    """,
}

_MEASURE = """
    import resource, time, statistics, json
    out = run()
    times = []
    for _ in range(20):
        t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
    # VmHWM: this process's own peak (ru_maxrss would start from the forking parent's)
    try:
        status = open("/proc/self/status").read().split("VmHWM:")[1]
        rss_kib = int(status.split()[0])
    except (OSError, IndexError):
        rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    np.save({out!r}, np.asarray(out))
    print(json.dumps({{"rss_mib": rss_kib / 1024, "run_s": statistics.median(times)}}))
"""


_ENV = dict(os.environ)


def _python(code):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=600, env=_ENV)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return r.stdout.strip().splitlines()[-1]


def import_seconds(mod, repeat):
    mod = "ember_lite" if mod == "ember_lite_numpy" else mod
    return statistics.median(float(_python(_IMPORT.format(mod=mod))) for _ in range(repeat))


def package_dir(mod):
    mod = "ember_lite" if mod == "ember_lite_numpy" else mod
    spec = __import__("importlib.util").util.find_spec(mod)
    return pathlib.Path(spec.origin).parent


def disk_mib(mod):
    total = 0
    for root, dirs, files in os.walk(package_dir(mod)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total / 2 ** 20


def _models(tmp):
    """The same MLP (same weights) saved by ember and by torch; an input batch."""
    import torch

    import ember
    import ember.nn as nn
    from ember.export import Dim, export, save
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(64, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 256),
                      nn.GELU(), nn.Linear(256, 10)).eval()
    x = np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32)
    save(export(m, (ember.from_numpy(x),), dynamic_shapes=({0: Dim("batch", max=4096)},)),
         tmp / "mlp.ember")
    tm = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.LayerNorm(256),
                             torch.nn.GELU(), torch.nn.Linear(256, 256), torch.nn.GELU(),
                             torch.nn.Linear(256, 10)).eval()
    tm.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                        for k, v in m.state_dict().items()})
    tx = torch.from_numpy(x)
    batch = torch.export.Dim("batch", max=4096)
    torch.export.save(torch.export.export(tm, (tx,), dynamic_shapes=({0: batch},)),
                      str(tmp / "mlp.pt2"))
    np.save(tmp / "x.npy", x)
    return m(ember.from_numpy(x)).detach().numpy()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--threads", type=int, default=None,
                    help="OMP/OpenBLAS threads of every runtime (default: each its own)")
    args = ap.parse_args(argv)
    if args.threads:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            _ENV[var] = str(args.threads)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    rows = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        want = _models(tmp)
        for mod in ("ember_lite", "ember_lite_numpy", "ember", "torch"):
            path = tmp / ("mlp.pt2" if mod == "torch" else "mlp.ember")
            code = textwrap.dedent(_RUN[mod].format(path=str(path), x=str(tmp / "x.npy"))) + \
                textwrap.dedent(_MEASURE.format(out=str(tmp / f"out_{mod}.npy")))
            measured = json.loads(_python(code))
            got = np.load(tmp / f"out_{mod}.npy")
            err = float(np.abs(got - want).max())
            rows[mod] = {"import_s": import_seconds(mod, args.repeat),
                         "disk_mib": disk_mib(mod), "max_abs_err": err, **measured}
    base = rows["ember_lite"]
    print(f"{'runtime':<11} {'import s':>9} {'peak RSS MiB':>13} {'one run ms':>11} "
          f"{'disk MiB':>9} {'max |err|':>10}")
    for mod, r in rows.items():
        print(f"{mod:<11} {r['import_s']:9.3f} {r['rss_mib']:13.1f} {r['run_s'] * 1e3:11.3f} "
              f"{r['disk_mib']:9.1f} {r['max_abs_err']:10.2e}")
    print("ratios to ember_lite: " + ", ".join(
        f"{m} import x{r['import_s'] / base['import_s']:.1f}, RSS x"
        f"{r['rss_mib'] / base['rss_mib']:.1f}, disk x{r['disk_mib'] / base['disk_mib']:.0f}"
        for m, r in rows.items() if m != "ember_lite"))
    with tempfile.TemporaryDirectory() as d:
        rows["c_path"] = c_path(pathlib.Path(d), args.repeat)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


_PER_CALL = """
    import json, statistics, sys, time, numpy as np
    t = time.perf_counter()
    import ember_lite
    prog = ember_lite.load({path!r})
    load_s = time.perf_counter() - t
    out = {{"backend": prog.backend, "compiled": prog.c_info.get("compiled"), "load_s": load_s}}
    for b in (2, 32, 256):
        x = np.random.default_rng(b).standard_normal((b,) + {shape!r}).astype(np.float32)
        prog(x)
        n = max(3, int(2000 / b))
        rounds = []
        for _ in range(5):
            t = time.process_time()
            for _ in range(n):
                prog(x)
            rounds.append((time.process_time() - t) / n)
        out[b] = statistics.median(rounds)
    print(json.dumps(out))
"""


def c_path(tmp, repeat):
    """(e): per-call CPU time of the MLP and a small CNN through C and through NumPy, and
    the load time with an empty kernel cache (C generated and compiled) and a warm one."""
    import ember
    import ember.nn as nn
    from ember.export import Dim, export, save
    ember.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(64, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 256),
                        nn.GELU(), nn.Linear(256, 10)).eval()

    class CNN(nn.Module):   # LeNet-like: conv-bn-relu-pool twice, two linear layers
        def __init__(self):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8)
            self.c2, self.b2 = nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16)
            self.f1, self.f2 = nn.Linear(16 * 7 * 7, 64), nn.Linear(64, 10)

        def forward(self, x):
            x = nn.functional.max_pool2d(ember.relu(self.b1(self.c1(x))), 2)
            x = nn.functional.max_pool2d(ember.relu(self.b2(self.c2(x))), 2)
            return self.f2(ember.relu(self.f1(x.flatten(1))))
    models = {"mlp": (mlp, (64,)), "cnn": (CNN().eval(), (1, 28, 28))}
    env = dict(_ENV, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               EMBER_CACHE_DIR=str(tmp / "cache"))
    out = {}
    print("\n(e) ember_lite per call, CPU ms at 1 thread (C / NumPy kernels), load s")
    for name, (model, shape) in models.items():
        path = tmp / f"{name}.ember"
        save(export(model, (ember.randn(2, *shape),),
                    dynamic_shapes=({0: Dim("batch", min=1, max=4096)},)), path)
        code = textwrap.dedent(_PER_CALL.format(path=str(path), shape=shape))
        res = {}
        for tag, extra in (("c_cold", {}), ("c", {}), ("numpy", {"EMBER_LITE_C": "0"})):
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=600, env=dict(env, **extra))
            if r.returncode:
                raise RuntimeError(r.stderr[-2000:])
            res[tag] = json.loads(r.stdout.strip().splitlines()[-1])
        out[name] = res
        c, n = res["c"], res["numpy"]
        assert c["backend"] == "c" and res["c_cold"]["compiled"] and not c["compiled"], res
        print(f"{name}: " + ", ".join(
            f"batch {b}: {c[str(b)] * 1e3:.3f} / {n[str(b)] * 1e3:.3f} "
            f"(x{n[str(b)] / c[str(b)]:.1f})"
            for b in (2, 32, 256)) +
            f"; load {res['c_cold']['load_s']:.2f} cold, {c['load_s']:.3f} cached, "
            f"{n['load_s']:.3f} NumPy")
    return out


if __name__ == "__main__":
    main()
