"""The real PyTorch programs of ``../shared/realprogs`` (public programs, unmodified, each
with a driver and torch's expected summary) run under ember and reach EXACT or SANE.

The programs are not part of this repository: they are found at ``$REALPROGS_DIR`` or
beside the repository (``../shared/realprogs``).  Programs of subsystems a later issue
builds are listed in ``LATER`` with that reason and are expected to fail until then.
"""
import os
import subprocess
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("REALPROGS_DIR") or os.path.normpath(
    os.path.join(_HERE, "..", "..", "shared", "realprogs"))

LATER = {}


def _programs():
    if not os.path.isdir(ROOT):
        return []
    return sorted(n for n in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, n, "driver.py")))


def _params():
    params = []
    for name in _programs():
        marks = [pytest.mark.slow]
        if name in LATER:
            marks.append(pytest.mark.xfail(reason=LATER[name], strict=True))
        params.append(pytest.param(name, marks=marks, id=name))
    return params or [pytest.param(None, marks=pytest.mark.skip(
        reason=f"the real programs are not on this machine (looked in {ROOT}); set "
               f"REALPROGS_DIR"))]


@pytest.mark.parametrize("name", _params())
def test_real_program_runs_under_ember(name, tmp_path):
    folder = os.path.join(ROOT, name)
    env = dict(os.environ, TORCH_IMPL="ember", PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(_HERE)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    log = tmp_path / f"{name}.log"
    with open(log, "w") as out:
        try:
            subprocess.run([sys.executable, "driver.py"], cwd=folder, env=env, stdout=out,
                           stderr=subprocess.STDOUT, timeout=300, start_new_session=True)
        except subprocess.TimeoutExpired:
            pass  # whatever SUMMARY lines were printed are judged below
    verdict = subprocess.run([sys.executable, os.path.join(ROOT, "_common", "compare.py"),
                              os.path.join(folder, "expected.txt"), str(log)],
                             capture_output=True, text=True, timeout=60)
    lines = verdict.stdout.strip().splitlines()
    assert lines, verdict.stderr
    bad = [ln for ln in lines if not ln.startswith(("EXACT", "SANE"))]
    tail = log.read_text(errors="replace")[-3000:]
    assert not bad, "\n".join(bad) + "\n--- log tail ---\n" + tail
