"""Peak memory of scaled_dot_product_attention at long sequences, ember against torch.

    python -m benchmarks.sdpa_memory [--length 8192] [--batch 4] [--dim 64]

Each library runs in a fresh process of its own: inputs (batch x 1 x L x d float32) are made
and a short call loads the kernels, then the process's peak resident memory is reset
(``/proc/self/clear_refs``) and one forward (causal and not) or one forward + backward runs.
The report is the peak's rise over the resident memory before the call, in MiB, beside the size
of one L x d tensor (q, k, v, the output and each gradient are that size) and the size of the
full L x L score matrix a non-blocked attention would hold: O(L d) memory means a few tensors'
worth, independent of L^2.
"""
import argparse
import json
import os
import subprocess
import sys

_CODE = r"""
import gc, json, sys
import numpy as np
lib = __import__({lib!r})
lib.set_num_threads(1)
F = lib.nn.functional
B, L, D, mode = {batch}, {length}, {dim}, {mode!r}

def rss_kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])

rng = np.random.default_rng(0)
q, k, v = (lib.from_numpy(rng.standard_normal((B, 1, L, D)).astype(np.float32))
           for _ in range(3))
if mode == "backward":
    for t in (q, k, v):
        t.requires_grad_(True)
small = [t[:, :, :64].detach() for t in (q, k, v)]
F.scaled_dot_product_attention(*small, is_causal=True)  # loads kernels
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak (VmHWM) restarts from the current resident size
before = rss_kib("VmRSS:")
out = F.scaled_dot_product_attention(q, k, v, is_causal=mode == "causal")
if mode == "backward":
    out.sum().backward()
peak = rss_kib("VmHWM:")
print(json.dumps({{"peak_rise_mib": (peak - before) / 1024}}))
"""

MODES = ("forward", "causal", "backward")


def measure(lib, mode, length, batch, dim):
    """The peak resident-memory rise (MiB) of one SDPA call of ``mode`` in a fresh process."""
    code = _CODE.format(lib=lib, mode=mode, length=length, batch=batch, dim=dim)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(f"{lib} {mode}: {r.stderr.strip().splitlines()[-1:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])["peak_rise_mib"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--length", type=int, default=8192)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--dim", type=int, default=64)
    args = p.parse_args(argv)
    one = args.batch * args.length * args.dim * 4 / 2 ** 20
    scores = args.batch * args.length * args.length * 4 / 2 ** 20
    print(f"SDPA {args.batch}x1x{args.length}x{args.dim} float32: one L x d tensor "
          f"{one:.1f} MiB, the full L x L scores {scores:.0f} MiB")
    print(f"{'mode':<10}{'ember MiB':>12}{'torch MiB':>12}")
    libs = ["ember"]
    try:
        import importlib.util
        if importlib.util.find_spec("torch") is not None:
            libs.append("torch")
    except ImportError:
        pass
    for mode in MODES:
        row = [measure(lib, mode, args.length, args.batch, args.dim) for lib in libs]
        print(f"{mode:<10}" + "".join(f"{x:12.1f}" for x in row))


if __name__ == "__main__":
    main()
