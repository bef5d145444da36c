"""Which vector instruction set ember's C code is built for: DEFAULT, AVX2 or AVX512.

The level in use is the best one this CPU has (`detect`), lowered by the environment
variable ``EMBER_CPU_CAPABILITY`` or, under torch's name, ``ATEN_CPU_CAPABILITY`` (the
first one set wins): ``default``, ``avx2`` or ``avx512``, in any case.  A request above
what the CPU has is clamped to the CPU's level with a warning -- code built for an
instruction set the CPU lacks would die of SIGILL -- and an unknown value raises a
ValueError naming the allowed ones.

`compile_flags` turns a level into compiler flags.  They name the instruction sets
explicitly instead of ``-march=native``, so the level really decides what the compiler may
emit: a DEFAULT build runs on any x86-64, and tests can build and compare every level this
CPU supports.  Both the eager C kernels (`ember._core.ckernels`) and the compiler's
generated C build with these flags, and the level is part of their cache keys.
"""
import functools
import os
import platform
import subprocess
import warnings

__all__ = ["DEFAULT", "AVX2", "AVX512", "LEVELS", "ENV_VARS", "detect", "current", "parse",
           "compile_flags", "supported_levels"]

DEFAULT, AVX2, AVX512 = "DEFAULT", "AVX2", "AVX512"
LEVELS = (DEFAULT, AVX2, AVX512)  # ascending: each level implies the ones before it
ENV_VARS = ("EMBER_CPU_CAPABILITY", "ATEN_CPU_CAPABILITY")

# the CPU flags (as /proc/cpuinfo spells them) a level needs; AVX2 code is built with -mfma
# too, so it needs FMA, and AVX512 means the Skylake-server subset every AVX512 CPU has
_REQUIRED = {
    AVX2: ("avx2", "fma"),
    AVX512: ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"),
}

# gcc/clang flags per level, on top of -O3; no -march=native, which would let the compiler
# use whatever this CPU has whatever the level
_ISA_FLAGS = {
    DEFAULT: (),
    AVX2: ("-mavx2", "-mfma"),
    AVX512: ("-mavx2", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq",
             "-mprefer-vector-width=512"),
}

# -fno-trapping-math lets GCC if-convert the branch-free kernels' selects (clamps, NaN
# passes) into vector blends without AVX512 masks: without it GCC 12 leaves the float32
# exp/sigmoid/gelu loops scalar at DEFAULT and AVX2 (measured 9x slower).  It changes no
# value: it only stops the compiler from preserving floating-point exception flags.
_BASE = ("-O3", "-fno-trapping-math")

_X86 = ("x86_64", "amd64", "i386", "i686", "x86")


def _proc_cpuinfo_flags():
    """The ``flags`` words of /proc/cpuinfo (Linux), or None where it cannot be read.
    The kernel leaves out features the OS does not enable (e.g. AVX512 without XSAVE
    support), so these are the ones a program may use."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        return None
    return set()


def _sysctl_flags():
    """The CPU feature words macOS reports (lower-cased), or None."""
    try:
        r = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                           capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return {w.lower().replace(".", "_") for w in r.stdout.split()}


def _level_of(flags):
    best = DEFAULT
    for level in (AVX2, AVX512):
        if all(f in flags for f in _REQUIRED[level]):
            best = level
    return best


@functools.lru_cache(maxsize=None)
def detect():
    """The best level this CPU (and OS) supports: from /proc/cpuinfo, else macOS's sysctl,
    else DEFAULT (also on every non-x86 machine)."""
    if platform.machine().lower() not in _X86:
        return DEFAULT
    flags = _proc_cpuinfo_flags()
    if not flags:
        flags = _sysctl_flags()
    return _level_of(flags) if flags else DEFAULT


def parse(value):
    """The level a capability name (``default``/``avx2``/``avx512``, any case) stands for;
    ValueError naming the allowed values otherwise."""
    level = str(value).strip().upper()
    if level not in LEVELS:
        allowed = ", ".join(repr(v.lower()) for v in LEVELS)
        raise ValueError(f"unknown CPU capability {value!r}: expected one of {allowed} "
                         f"(any case)")
    return level


def supported_levels():
    """Every level this CPU can run, lowest first (the ones tests compare)."""
    return LEVELS[:LEVELS.index(detect()) + 1]


def current():
    """The level in use: `detect`'s, lowered by $EMBER_CPU_CAPABILITY or
    $ATEN_CPU_CAPABILITY.  Read on every call (it is cheap), so a test can change it."""
    for var in ENV_VARS:
        value = os.environ.get(var)
        if value:
            return _requested(var, value)
    return detect()


@functools.lru_cache(maxsize=None)
def _requested(var, value):
    # cached per setting so that a clamp warns once, not on every build
    try:
        level = parse(value)
    except ValueError as e:
        raise ValueError(f"${var}: {e}") from None
    best = detect()
    if LEVELS.index(level) > LEVELS.index(best):
        warnings.warn(f"${var}={value} asks for {level}, but this CPU supports at most {best}; "
                      f"using {best}", UserWarning, stacklevel=3)
        return best
    return level


def compile_flags(level=None):
    """The C compiler flags for ``level`` (default: `current`): ``-O3 -fno-trapping-math``
    plus the instruction-set flags of that level (none for DEFAULT)."""
    level = current() if level is None else parse(level)
    return _BASE + _ISA_FLAGS[level]
