"""CPU capability levels (ember._core.cpu_capability, ember.backends.cpu): detection from
the CPU's flags, the EMBER_CPU_CAPABILITY / ATEN_CPU_CAPABILITY downgrade, the compiler
flags of each level, and the eager C kernels built and checked at every level this CPU
supports (one subprocess per level, as the setting is read when the library is built)."""
import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember._core import cpu_capability as cc
from ember._core.ckernels import build as ckbuild

needs_cc = pytest.mark.skipif(ckbuild.find_compiler() is None and not os.environ.get("CI"),
                              reason="no C compiler")
SUPPORTED = cc.supported_levels()
AVX512_FLAGS = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"}


@pytest.fixture
def fresh(monkeypatch):
    """No capability variable set, and detection/clamp caches cleared before and after."""
    for var in cc.ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    cc.detect.cache_clear()
    cc._requested.cache_clear()
    yield monkeypatch
    cc.detect.cache_clear()
    cc._requested.cache_clear()


def _pretend_cpu(mp, flags, machine="x86_64"):
    mp.setattr(cc, "_proc_cpuinfo_flags", lambda: set(flags))
    mp.setattr(cc.platform, "machine", lambda: machine)
    cc.detect.cache_clear()
    cc._requested.cache_clear()


@pytest.mark.parametrize("flags, level", [
    (set(), "DEFAULT"),
    ({"sse4_2", "avx"}, "DEFAULT"),
    ({"avx2"}, "DEFAULT"),                       # AVX2 code is built with -mfma: needs fma
    ({"avx2", "fma"}, "AVX2"),
    ({"avx2", "fma", "avx512f"}, "AVX2"),        # AVX512 needs the whole Skylake-server set
    ({"avx2", "fma", "avx512f", "avx512bw", "avx512vl"}, "AVX2"),
    (AVX512_FLAGS, "AVX512"),
    (AVX512_FLAGS | {"avx512_vnni", "avx512_bf16"}, "AVX512"),
])
def test_detect_from_cpu_flags(fresh, flags, level):
    _pretend_cpu(fresh, flags)
    assert cc.detect() == level
    assert cc.current() == level
    assert cc.supported_levels() == cc.LEVELS[:cc.LEVELS.index(level) + 1]


def test_detect_non_x86_is_default_and_unreadable_cpuinfo_falls_back(fresh):
    _pretend_cpu(fresh, AVX512_FLAGS, machine="aarch64")
    assert cc.detect() == "DEFAULT"
    # no /proc/cpuinfo and no sysctl: the portable answer is DEFAULT, never an error
    fresh.setattr(cc, "_proc_cpuinfo_flags", lambda: None)
    fresh.setattr(cc, "_sysctl_flags", lambda: None)
    fresh.setattr(cc.platform, "machine", lambda: "x86_64")
    cc.detect.cache_clear()
    assert cc.detect() == "DEFAULT"
    # macOS words (upper case, AVX1.0) are read the same way
    fresh.setattr(cc, "_sysctl_flags", lambda: {w.lower() for w in
                                                "FMA AVX1.0 AVX2 AVX512F AVX512DQ".split()})
    cc.detect.cache_clear()
    assert cc.detect() == "AVX2"


def test_real_cpu_matches_proc_cpuinfo(fresh):
    try:
        with open("/proc/cpuinfo") as f:
            words = set(next(ln for ln in f if ln.startswith("flags")).split())
    except (OSError, StopIteration):  # not Linux: the other source detection reads
        words = cc._sysctl_flags() or set()
    want = ("AVX512" if AVX512_FLAGS <= words else
            "AVX2" if {"avx2", "fma"} <= words else "DEFAULT")
    assert cc.detect() == want
    assert ember.backends.cpu.get_cpu_capability() == want


@pytest.mark.parametrize("value, level", [
    ("default", "DEFAULT"), ("DEFAULT", "DEFAULT"), ("Avx2", "AVX2"), ("avx2", "AVX2"),
    ("AVX512", "AVX512"), (" avx512 ", "AVX512"),
])
@pytest.mark.parametrize("var", cc.ENV_VARS)
def test_env_var_selects_level(fresh, var, value, level):
    _pretend_cpu(fresh, AVX512_FLAGS)
    fresh.setenv(var, value)
    assert cc.current() == level
    assert ember.backends.cpu.get_cpu_capability() == level


def test_ember_variable_wins_over_aten_and_empty_means_unset(fresh):
    _pretend_cpu(fresh, AVX512_FLAGS)
    fresh.setenv("ATEN_CPU_CAPABILITY", "default")
    fresh.setenv("EMBER_CPU_CAPABILITY", "avx2")
    assert cc.current() == "AVX2"
    fresh.setenv("EMBER_CPU_CAPABILITY", "")
    assert cc.current() == "DEFAULT"
    fresh.setenv("ATEN_CPU_CAPABILITY", "")
    assert cc.current() == "AVX512"


def test_request_above_the_cpu_is_clamped_with_a_warning(fresh):
    _pretend_cpu(fresh, {"avx2", "fma"})
    fresh.setenv("EMBER_CPU_CAPABILITY", "avx512")
    with pytest.warns(UserWarning, match=r"EMBER_CPU_CAPABILITY=avx512 asks for AVX512, but "
                                         r"this CPU supports at most AVX2; using AVX2"):
        assert cc.current() == "AVX2"
    assert cc.compile_flags() == cc.compile_flags("AVX2")
    _pretend_cpu(fresh, set())
    fresh.setenv("EMBER_CPU_CAPABILITY", "avx2")
    with pytest.warns(UserWarning, match="at most DEFAULT"):
        assert ember.backends.cpu.get_cpu_capability() == "DEFAULT"


@pytest.mark.parametrize("var", cc.ENV_VARS)
@pytest.mark.parametrize("value", ["avx", "sse4", "native", "avx512_vnni", "1"])
def test_unknown_value_raises_naming_the_allowed_ones(fresh, var, value):
    fresh.setenv(var, value)
    with pytest.raises(ValueError) as e:
        ember.backends.cpu.get_cpu_capability()
    msg = str(e.value)
    assert var in msg and repr(value) in msg
    assert "'default', 'avx2', 'avx512'" in msg
    with pytest.raises(ValueError, match="expected one of 'default', 'avx2', 'avx512'"):
        cc.compile_flags(value)


def test_compile_flags_per_level():
    assert cc.compile_flags("DEFAULT") == ("-O3", "-fno-trapping-math")
    assert cc.compile_flags("avx2") == ("-O3", "-fno-trapping-math", "-mavx2", "-mfma")
    f512 = cc.compile_flags("Avx512")
    assert f512[:2] == ("-O3", "-fno-trapping-math")
    assert {"-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma",
            "-mprefer-vector-width=512"} == set(f512[2:])
    for level in cc.LEVELS:
        assert not any(f.startswith(("-march", "-mcpu", "-mtune")) for f in
                       cc.compile_flags(level))


_PROBE = r"""
int probe_abi(void) { return 7; }
int probe_fma(void) {
#ifdef __FMA__
    return 1;
#else
    return 0;
#endif
}
int probe_level(void) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
    return 2;
#elif defined(__AVX2__)
    return 1;
#else
    return 0;
#endif
}
"""


@needs_cc
@pytest.mark.parametrize("level", cc.LEVELS)
def test_builder_compiles_for_the_level_it_is_given(tmp_path, monkeypatch, level):
    # the instruction-set macros the compiler defines are those of the level, not of this
    # CPU (no -march=native); any level compiles, whether or not this CPU can run it
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    lib, info = ckbuild.build("ember_probe", _PROBE, lambda lib: lib.probe_abi() == 7,
                              level=level)
    assert info["cpu_capability"] == level
    assert lib.probe_level() == cc.LEVELS.index(level)
    assert lib.probe_fma() == (level != "DEFAULT")
    assert "-march=native" not in info["flags"]
    assert info["flags"].startswith(" ".join(cc.compile_flags(level)))
    # the level is in the cache key: every level has a library of its own
    names = {p.name for p in tmp_path.glob("ember_probe-*.so")}
    assert os.path.basename(info["path"]) in names


@needs_cc
def test_builder_levels_get_separate_cache_entries(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    paths = {ckbuild.build("ember_probe", _PROBE, lambda lib: lib.probe_abi() == 7,
                           level=level)[1]["path"] for level in cc.LEVELS}
    assert len(paths) == 3


# Runs in a child with the level set: the eager kernels against NumPy/SciPy references, the
# library's own report of its level, and its raw results for comparison across levels.
_CHILD = textwrap.dedent(r"""
    import json, sys
    import numpy as np, scipy.special as sps
    import ember
    from ember._core import ckernels as ck
    from ember.backends import cpu

    st = ck.status()
    rng = np.random.default_rng(0)
    n = 16 * ck.MIN_SIZE + 3             # above MIN_SIZE, with a vector-remainder tail
    x = (rng.standard_normal(n) * 6).astype(np.float32)
    x[:6] = [0.0, -0.0, 30.0, -30.0, 1e-30, -90.0]
    rows = x[:64 * 512].reshape(64, 512)
    xd = x.astype(np.float64)

    def softmax_ref(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    T = lambda a: ember.from_numpy(np.ascontiguousarray(a))
    got = {
        "sigmoid": ember.sigmoid(T(x)).numpy(),
        "exp": ember.exp(T(x)).numpy(),
        "gelu": ember.nn.functional.gelu(T(x)).numpy(),
        "silu": ember.nn.functional.silu(T(x)).numpy(),
        "softmax": ember.softmax(T(rows), -1).numpy(),
        "log_softmax": ember.log_softmax(T(rows), -1).numpy(),
        "layer_norm": ember.nn.functional.layer_norm(T(rows), (512,)).numpy(),
    }
    mu = rows.astype(np.float64).mean(-1, keepdims=True)
    var = rows.astype(np.float64).var(-1, keepdims=True)
    ref = {
        "sigmoid": sps.expit(xd),
        "exp": np.exp(xd),
        "gelu": xd * 0.5 * (1 + sps.erf(xd / np.sqrt(2))),
        "silu": xd * sps.expit(xd),
        "softmax": softmax_ref(rows.astype(np.float64)),
        "log_softmax": np.log(softmax_ref(rows.astype(np.float64))),
        "layer_norm": (rows - mu) / np.sqrt(var + 1e-5),
    }
    err = {}
    for k in got:
        assert got[k].dtype == np.float32 and got[k].shape == ref[k].shape, k
        r = ref[k]
        # relative error, absolute near zero (float32 gelu cancels in 1 + erf(x) for x < 0)
        err[k] = float(np.max(np.abs(got[k] - r) / np.maximum(np.abs(r), 1.0)))
    # the C path ran: the NumPy fallback of sigmoid would not be bit-equal to the kernel
    direct = ck.unary("sigmoid", None, ("f32",))(np, x)
    json.dump({"status": {k: st.get(k) for k in ("available", "reason", "cpu_capability",
                                                   "flags", "path")},
               "reported": cpu.get_cpu_capability(), "err": err,
               "same_as_kernel": bool(np.array_equal(direct, got["sigmoid"])),
               "sigmoid": got["sigmoid"][:4096].tolist()}, sys.stdout)
""")


@functools.lru_cache(maxsize=None)  # one child per level for the two tests that read it
def _run_level(level):
    env = dict(os.environ, EMBER_CPU_CAPABILITY=level.lower(), PYTHONWARNINGS="error")
    env.pop("ATEN_CPU_CAPABILITY", None)
    env.pop("EMBER_CKERNELS", None)
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@needs_cc
def test_eager_kernels_at_every_supported_level():
    results = {level: _run_level(level) for level in SUPPORTED}
    for level, res in results.items():
        st = res["status"]
        assert st["available"], st["reason"]
        assert res["reported"] == level
        assert st["cpu_capability"] == level
        assert st["flags"].startswith(" ".join(cc.compile_flags(level)))
        assert res["same_as_kernel"]
        for name, e in res["err"].items():
            # float32 results against float64 references: a few float32 ulps (measured
            # 0.6-1.8e-7 at every level)
            assert e < 5e-7, (level, name, e)
    # one cached library per level
    assert len({r["status"]["path"] for r in results.values()}) == len(SUPPORTED)
    # the levels agree with each other to within an ulp or two (FMA contraction differs)
    base = np.array(results[SUPPORTED[0]]["sigmoid"], np.float32)
    for level in SUPPORTED[1:]:
        other = np.array(results[level]["sigmoid"], np.float32)
        np.testing.assert_allclose(other, base, rtol=3e-7, atol=0)


@needs_cc
@pytest.mark.skipif(shutil.which("objdump") is None and not os.environ.get("CI"),
                    reason="no objdump")
def test_eager_library_holds_the_levels_instructions():
    # the library really is built for its level: 512-bit registers only at AVX512, 256-bit
    # ones from AVX2 on, neither at DEFAULT
    for level in SUPPORTED:
        path = _run_level(level)["status"]["path"]
        asm = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                             capture_output=True, text=True, check=True).stdout
        assert ("%zmm" in asm) == (level == "AVX512"), level
        assert ("%ymm" in asm) == (level != "DEFAULT"), level


@pytest.mark.parametrize("level", [lv.lower() for lv in SUPPORTED])
def test_matches_torch_reporting(level):
    # torch as the oracle for the names and the downgrade, at every level this CPU has
    code = ("import torch, ember; print(torch.backends.cpu.get_cpu_capability(), "
            "ember.backends.cpu.get_cpu_capability())")
    env = dict(os.environ, ATEN_CPU_CAPABILITY=level)
    env.pop("EMBER_CPU_CAPABILITY", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, timeout=300).stdout.split()
    assert out == [level.upper(), level.upper()]
