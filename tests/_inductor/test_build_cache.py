"""The built library is cached on disk: a second process loads it without compiling, two
processes building at once both succeed; EMBER_LOGS=output_code prints the source."""
import json
import os
import subprocess
import sys
import uuid

import numpy as np

import ember.nn.functional as F
from ember._inductor import build, config

from .helpers import check, rand

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = r"""
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
import ember
from ember._inductor import build
from _inductor.helpers import compile_fn, rand
x = rand(64, 32)
scale = {scale!r}
compiled, want = compile_fn(lambda x: ((x * scale).exp() + 1).sigmoid().sum(-1), x)
got = compiled(x)
ok = bool(np.allclose(np.asarray(got[0]._data), np.asarray(want[0]._data), rtol=1e-5))
print(json.dumps(dict(build.COUNTERS, ok=ok, backend=compiled.backend)))
"""


def _spawn(cache, scale):
    # EMBER_CKERNELS=0: the eager kernels would be built in the fresh cache dir too (slow)
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache), EMBER_CKERNELS="0")
    src = SCRIPT.format(tests=os.path.join(ROOT, "tests"), scale=scale)
    return subprocess.Popen([sys.executable, "-c", src], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def _result(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _unique_scale():
    # a constant no earlier run compiled, so the first build here really compiles
    return 0.25 + (uuid.uuid4().int % 10 ** 6) * 1e-9


def test_second_process_reuses_the_library(tmp_path):
    if not build.compiler_available("auto"):
        return  # nothing is built without a compiler (the NumPy path is tested elsewhere)
    scale = _unique_scale()
    first = _result(_spawn(tmp_path, scale))
    assert first["ok"] and first["backend"] == "c" and first["compiled"] == 1
    second = _result(_spawn(tmp_path, scale))
    assert second["ok"] and second["compiled"] == 0 and second["cached"] == 1


def test_two_processes_building_at_once(tmp_path):
    if not build.compiler_available("auto"):
        return
    scale = _unique_scale()
    procs = [_spawn(tmp_path, scale) for _ in range(2)]
    results = [_result(p) for p in procs]
    assert all(r["ok"] and r["backend"] == "c" for r in results)
    # the lock lets one compile while the other waits and loads its library
    assert sum(r["compiled"] for r in results) == 1
    assert sum(r["cached"] for r in results) == 1


def test_output_code_log(monkeypatch, capsys):
    monkeypatch.setenv("EMBER_LOGS", "output_code")
    x = rand(8, 8)
    check(lambda x: F.softmax(x, -1), x)
    err = capsys.readouterr().err
    assert "ember inductor output code" in err and "def call(" in err


def test_no_compiler_uses_numpy_kernels(monkeypatch):
    monkeypatch.setattr(config, "cc", None)
    before = dict(build.COUNTERS)
    x = rand(8, 8)
    c = check(lambda x: (x.exp() * 2).sum(-1), x, kernels=1)
    assert c.backend == "numpy" and "def kernel0(" in c.source
    assert build.COUNTERS == before


def test_options_override_config():
    x = rand(4, 4)
    c = check(lambda x: x.exp() + 1, x, options={"cc": None})
    assert c.backend == "numpy"
    np.testing.assert_allclose(np.asarray(c(x)[0]._data), np.exp(np.asarray(x._data)) + 1,
                               rtol=1e-6)
