"""Real programs: unmodified PyTorch scripts run on torch and on ember and agree.

Each ``p*.py`` here is an ordinary PyTorch program (``import torch``).  It runs
twice in fresh interpreters: with the real torch, and under ``python -m
ember.compat`` (where ``import torch`` is ember; a poisoned ``torch`` package on
``PYTHONPATH`` makes any fall-through to the real torch fail loudly).  Data and
initial weights come from NumPy with fixed seeds, so both runs compute the same
numbers.  Output protocol of the scripts:

- ``= key values...``: deterministic; both runs must print the same text, numbers
  equal within a tolerance;
- ``ok key True``: a self-check; must be True in both runs;
- anything else (``~ key ...``): informational, e.g. values after training with
  dropout or shuffling, whose random streams differ between the libraries.
"""
import math
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = sorted(f for f in os.listdir(HERE) if re.fullmatch(r"p\d\d_\w+\.py", f))
NUMBER = re.compile(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?")
# (rtol, atol) where float32 training drifts more than the default
TOLERANCE = {}
DEFAULT_TOL = (1e-3, 1e-4)


@pytest.fixture(scope="module")
def poisoned_torch(tmp_path_factory):
    root = tmp_path_factory.mktemp("poison")
    (root / "torch").mkdir()
    (root / "torch" / "__init__.py").write_text(
        "raise ImportError('the real torch was imported in an ember.compat run')\n")
    return str(root)


def _env(extra_path=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONHASHSEED="0")
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, env.get("PYTHONPATH")) if p)
    return env


def _run(args, env):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=240,
                       cwd=HERE, env=env)
    assert r.returncode == 0, f"{args} failed:\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    return r.stdout


def _parse(stdout):
    det, checks = [], []
    for line in stdout.splitlines():
        if line.startswith("= "):
            # dtypes print as torch.X / ember.X; the name after the dot must agree
            det.append(line[2:].replace("ember.", "torch."))
        elif line.startswith("ok "):
            checks.append(line[3:])
    return det, checks


def _same(a, b, rtol, atol):
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        fx, fy = float(x), float(y)
        if not math.isclose(fx, fy, rel_tol=rtol, abs_tol=atol):
            return False
    return True


@pytest.mark.parametrize("program", PROGRAMS)
def test_program_runs_on_ember_like_on_torch(program, poisoned_torch):
    ref = _run([program], _env())
    got = _run(["-m", "ember.compat", program], _env(poisoned_torch))
    ref_det, ref_checks = _parse(ref)
    got_det, got_checks = _parse(got)
    assert ref_det, f"{program} printed no results"
    for checks, who in ((ref_checks, "torch"), (got_checks, "ember")):
        failed = [c for c in checks if not c.endswith(" True")]
        assert not failed, f"{program} self-checks failed on {who}: {failed}"
    assert [c.split()[0] for c in got_checks] == [c.split()[0] for c in ref_checks]
    assert [d.split()[0] for d in got_det] == [d.split()[0] for d in ref_det]
    rtol, atol = TOLERANCE.get(program, DEFAULT_TOL)
    diffs = [f"torch: {r}\nember: {g}" for r, g in zip(ref_det, got_det)
             if not _same(r, g, rtol, atol)]
    assert not diffs, f"{program}: results differ\n" + "\n".join(diffs)


def test_output_comparison_catches_differences():
    assert _same("loss 0.12345 (4, 3)", "loss 0.12346 (4, 3)", 1e-3, 1e-4)
    assert _same("sum -0.00000", "sum 0.00000", 1e-3, 1e-4)
    assert not _same("loss 0.12345", "loss 0.13345", 1e-3, 1e-4)
    assert not _same("shape (4, 3)", "shape (4, 3, 1)", 1e-3, 1e-4)
    assert not _same("flag True", "flag False", 1e-3, 1e-4)
    assert _parse("= a 1\nok b True\n~ c 3\n= d ember.bool\n") == (["a 1", "d torch.bool"], ["b True"])
