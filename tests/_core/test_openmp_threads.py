"""OpenMP in ember's C kernels: the wait policy ember gives libgomp when it loads it (and
the user's OMP_WAIT_POLICY / GOMP_SPINCOUNT winning over it), read back from the runtime
itself (``OMP_DISPLAY_ENV=VERBOSE``: libgomp prints its settings when it initialises); the
one thread count every C kernel asks (``blas_threads.openmp_threads``), and a forked child
running the kernels on one thread."""
import os
import re
import select
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember._core import blas_threads
from ember._core import ckernels as ck
from ember._inductor.codegen import wrapper
from ember_lite import _build

needs_openmp = pytest.mark.skipif(  # never skipped in CI, which has gcc with OpenMP
    (not ck.status()["available"] or not ck.status()["openmp"]) and not os.environ.get("CI"),
    reason=f"no OpenMP kernels here: {ck.status()['reason']}")

# a fresh process that imports ember and runs a parallel kernel (libgomp loads with
# ember's eager library) ...
_EMBER = textwrap.dedent("""
    import numpy as np
    import ember
    from ember._core import ckernels as ck
    assert ck.status()["available"], ck.status()
    ember.set_num_threads(2)
    x = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)
    ck.softmax(x, 1, False)
""")
# ... or, lighter, one that loads a small OpenMP library through the same builder and loader
# (ember_lite._build) without importing ember
_PROBE = textwrap.dedent("""
    from ember_lite import _build
    src = ("#include <omp.h>\\n"
           "int probe(void) { int n = 0;\\n"
           "#pragma omp parallel num_threads(2) reduction(+:n)\\n"
           "n += 1;\\n"
           "return n; }\\n")
    flags = ("-O1",) + _build.BASE_FLAGS + _build.OPENMP_FLAGS
    lib, _ = _build.build("omp_probe", src, lambda lib: lib.probe() > 0, [(flags, {})])
""")
_REPORT = "\nimport os\nprint('ENV', os.environ.get('OMP_WAIT_POLICY'), " \
    "os.environ.get('GOMP_SPINCOUNT'))\n"


def _runtime_settings(child=_PROBE, **env):
    """libgomp's own wait policy and spin count in a fresh process running ``child`` with
    ``env`` added (after removing any OpenMP wait settings of ours), and the two variables
    as that process's ``os.environ`` has them afterwards."""
    clean = {k: v for k, v in os.environ.items() if k not in _build.OPENMP_USER_SETTINGS}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    clean["PYTHONPATH"] = os.pathsep.join([root] + [clean.get("PYTHONPATH", "")])
    p = subprocess.run([sys.executable, "-c", child + _REPORT], capture_output=True,
                       text=True, env={**clean, "OMP_DISPLAY_ENV": "VERBOSE", **env},
                       timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    shown = dict(re.findall(r"^\s*(OMP_WAIT_POLICY|GOMP_SPINCOUNT) = '([^']*)'", p.stderr,
                            re.M))
    after = p.stdout.split("ENV", 1)[1].split()
    return shown, [None if v == "None" else v for v in after]


def _spin_count(policy_env):
    """The spin count libgomp derives from ember's chosen variables."""
    if "GOMP_SPINCOUNT" in policy_env:
        return policy_env["GOMP_SPINCOUNT"]
    return {"PASSIVE": "0", "ACTIVE": "30000000000"}[policy_env["OMP_WAIT_POLICY"].upper()]


@needs_openmp
@pytest.mark.parametrize("child", [_EMBER, _PROBE], ids=["ember", "ember_lite"])
def test_ember_sets_its_wait_policy_only_while_loading_libgomp(child):
    shown, after = _runtime_settings(child)
    assert shown["GOMP_SPINCOUNT"] == _spin_count(_build.OPENMP_DEFAULTS)
    assert after == [None, None]  # the process's environment is left as it was


@needs_openmp
@pytest.mark.parametrize("env, policy, spins", [
    ({"OMP_WAIT_POLICY": "ACTIVE"}, "ACTIVE", "30000000000"),
    ({"OMP_WAIT_POLICY": "passive"}, "PASSIVE", "0"),
    ({"GOMP_SPINCOUNT": "12345"}, None, "12345"),
    ({"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "777"}, "ACTIVE", "777"),
])
def test_the_users_wait_policy_wins(env, policy, spins):
    shown, after = _runtime_settings(**env)
    assert shown["GOMP_SPINCOUNT"] == spins
    if policy is not None:
        assert shown["OMP_WAIT_POLICY"] == policy
    # the user's variables are untouched
    assert after == [env.get("OMP_WAIT_POLICY"), env.get("GOMP_SPINCOUNT")]


def test_openmp_environ_defers_to_any_user_setting(monkeypatch):
    for k in _build.OPENMP_USER_SETTINGS:
        monkeypatch.delenv(k, raising=False)
    assert _build.openmp_environ() == _build.OPENMP_DEFAULTS
    for k in _build.OPENMP_USER_SETTINGS:
        monkeypatch.setenv(k, "1")
        assert _build.openmp_environ() == {}
        monkeypatch.delenv(k)


@pytest.fixture
def threads():
    prior = ember.get_num_threads()
    yield
    ember.set_num_threads(prior)


def test_every_kernel_family_asks_one_thread_count(threads):
    for n in (1, 2, 3):
        ember.set_num_threads(n)
        assert blas_threads.openmp_threads() == n == blas_threads.num_threads()
        assert wrapper.threads() == n  # compiled graphs
        if ck.status()["openmp"]:
            assert ck._threads(ck.PARALLEL_SIZE) == n  # eager kernels


@needs_openmp
@pytest.mark.skipif(not hasattr(os, "fork") and not os.environ.get("CI"),
                    reason="no fork on this platform")
def test_forked_child_runs_the_kernels_on_one_thread(threads):
    ember.set_num_threads(2)
    x = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)
    want = ck.softmax(x, 1, False)  # the parent's libgomp pool has started its thread
    assert want is not None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, never return into pytest
        code = 1
        try:
            got = ck.softmax(x, 1, False)
            ok = (blas_threads.openmp_threads() == 1 and wrapper.threads() == 1
                  and ck._threads(x.size) == 1 and np.array_equal(got, want))
            os.write(w, b"ok" if ok else b"wrong")
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], 120)
        msg = os.read(r, 16) if ready else b"timed out"
    finally:
        os.close(r)
        if not ready:
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert msg == b"ok"
    assert blas_threads.openmp_threads() == 2  # the parent keeps its threads
