"""C source -> shared library, compiled once and cached on disk, loaded with ctypes.

The cache key hashes the source, the compiler and its flags, the CPU (``-march=native``
code is only valid on the machine that built it) and the Python/NumPy versions.  A
library is compiled to a temporary file next to its final name and renamed into place,
so concurrent processes (pytest workers, DataLoader workers) never load a half-written
file; an advisory lock keeps them from compiling the same library twice.  A cached file
that fails to load (truncated, corrupted) is rebuilt once.  Every failure is recorded
as a reason string, never raised or warned: callers fall back to NumPy.
"""
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import numpy as np

__all__ = ["build", "cache_dir", "BuildError"]

BASE_FLAGS = ("-O3", "-march=native", "-shared", "-fPIC", "-std=gnu11")
OPENMP_FLAGS = ("-fopenmp",)
FALLBACK_FLAGS = ("-fopenmp-simd",)  # keeps the `omp simd` hints without the runtime


class BuildError(Exception):
    """Why no library could be built or loaded (a reason for ``status()``)."""


def cache_dir():
    """``$EMBER_CACHE_DIR`` (kernels go in it directly) or ``~/.cache/ember/kernels``."""
    d = os.environ.get("EMBER_CACHE_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ember", "kernels")


def find_compiler():
    """``$CC`` (may carry flags) or the first of cc, gcc, clang on PATH; None if none."""
    cc = os.environ.get("CC")
    if cc:
        parts = cc.split()
        exe = shutil.which(parts[0])
        return [exe] + parts[1:] if exe else None
    for name in ("cc", "gcc", "clang"):
        exe = shutil.which(name)
        if exe:
            return [exe]
    return None


def _cpu_id():
    try:
        with open("/proc/cpuinfo") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags"))]
        return "".join(sorted(set(lines)))
    except OSError:
        return platform.processor()


def _key(source, cc, flags):
    h = hashlib.sha256()
    for part in (source, " ".join(cc), " ".join(flags), platform.machine(), _cpu_id(),
                 sys.implementation.cache_tag or "", np.__version__):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _compile(cc, flags, src_path, out_path):
    cmd = list(cc) + list(flags) + [src_path, "-o", out_path, "-lm"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{' '.join(cmd)}: {e}"
    if r.returncode != 0:
        return f"{' '.join(cmd)} failed:\n{r.stderr.strip()[-2000:]}"
    return None


def _load(path, check):
    """ctypes handle of ``path``, or None when it does not load or ``check`` rejects it."""
    # libgomp reads OMP_WAIT_POLICY when it is first loaded: passive waiting keeps its idle
    # threads from spinning against OpenBLAS's after a parallel kernel
    prior = os.environ.get("OMP_WAIT_POLICY")
    if prior is None:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        lib = ctypes.CDLL(path)
        return lib if check(lib) else None
    except (OSError, AttributeError):
        return None
    finally:
        if prior is None:
            os.environ.pop("OMP_WAIT_POLICY", None)


class _Lock:
    """An advisory exclusive lock on ``path`` (a no-op where fcntl is missing)."""

    def __init__(self, path):
        self.path, self.f = path, None

    def __enter__(self):
        try:
            import fcntl
            self.f = open(self.path, "a")
            fcntl.flock(self.f, fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass
        return self

    def __exit__(self, *exc):
        if self.f is not None:
            self.f.close()  # closing releases the lock


def build(name, source, check):
    """Load the library for ``source`` (compiling and caching it first if needed).

    ``check(lib)`` must return True for a usable library.  Returns ``(lib, info)`` with
    ``info`` a dict (path, compiler, flags, openmp, compiled: whether this call compiled);
    raises `BuildError` with the reason when no library can be had.
    """
    cc = find_compiler()
    if cc is None:
        raise BuildError("no C compiler found (set $CC or put cc/gcc/clang on PATH)")
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise BuildError(f"cannot create the kernel cache directory {d}: {e}") from None
    errors = []
    for extra in (OPENMP_FLAGS, FALLBACK_FLAGS):
        flags = BASE_FLAGS + extra
        path = os.path.join(d, f"{name}-{_key(source, cc, flags)}.so")
        info = {"path": path, "compiler": " ".join(cc), "flags": " ".join(flags),
                "openmp": extra is OPENMP_FLAGS, "compiled": False}
        if os.path.exists(path):
            lib = _load(path, check)
            if lib is not None:
                return lib, info
        with _Lock(path + ".lock"):
            # another process may have finished it while this one waited for the lock
            if os.path.exists(path):
                lib = _load(path, check)
                if lib is not None:
                    return lib, info
            err = _build_file(cc, flags, source, path, d)
        if err is None:
            lib = _load(path, check)
            if lib is not None:
                info["compiled"] = True
                return lib, info
            err = f"{path} was built but does not load"
        errors.append(err)
    raise BuildError("\n".join(errors))


def _build_file(cc, flags, source, path, d):
    fd, tmp_so = tempfile.mkstemp(suffix=".so.tmp", dir=d)
    os.close(fd)
    src = tmp_so[:-len(".so.tmp")] + ".c"
    try:
        with open(src, "w") as f:
            f.write(source)
        err = _compile(cc, flags, src, tmp_so)
        if err is None:
            os.replace(tmp_so, path)  # atomic: readers see the old file or the whole new one
        return err
    finally:
        for p in (src, tmp_so):
            try:
                os.unlink(p)
            except OSError:
                pass
