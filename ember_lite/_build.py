"""C source -> shared library, compiled once and cached on disk, loaded with ctypes: the
builder of ember's C kernels (`ember._core.ckernels.build` adds the CPU capability levels'
flags) and of ember_lite's generated programs.  It imports nothing of ember, so the lite
runtime uses the very same builder and cache.

The cache key hashes the source, the compiler, the flags and the caller's tag, the CPU and
the Python/NumPy versions.

Loading a cached library runs its code, so the cache is trusted only as far as it is
shown to be ours and intact:

- The cache directory is created 0700.  An existing one is used only if it is a
  directory owned by this user that no one else can write (not group/world-writable);
  otherwise it is refused and a fresh private temporary directory is used for this
  process (removed at exit), with the reason in ``info["cache_refused"]``.
- Every library is recorded at build time with the SHA-256 of its bytes in
  ``<library>.sha256``.  A library is loaded only if it is a regular file (no symlink)
  owned by this user, not writable by others, whose bytes hash to the recorded value.
  The bytes are hashed from an open descriptor and that same descriptor's file is
  loaded (``/proc/self/fd``), so the file cannot be swapped between check and load.
  A truncated or corrupted library (which ``dlopen`` may map and then crash on with
  SIGBUS) or one planted under the predictable name fails the check and is rebuilt.
- Library and record are written to temporary files, flushed to disk and renamed into
  place (record last), so concurrent processes (pytest workers, DataLoader workers)
  never see a half-written file; an advisory lock keeps them from compiling the same
  library twice, and a reader that finds a stale record waits for the lock.

Every failure is recorded as a reason string, never raised or warned: callers fall back
to NumPy.
"""
import atexit
import ctypes
import hashlib
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile

import numpy as np

__all__ = ["build", "attempt", "cache_dir", "find_compiler", "check_dir", "BuildError",
           "BASE_FLAGS", "OPENMP_FLAGS", "FALLBACK_FLAGS"]

BASE_FLAGS = ("-shared", "-fPIC", "-std=gnu11")  # after the optimisation and ISA flags
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


def _key(source, cc, flags, tag):
    h = hashlib.sha256()
    for part in (source, " ".join(cc), tag, " ".join(flags), platform.machine(), _cpu_id(),
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


def _digest_fd(fd):
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return h.hexdigest()
        h.update(b)


def _owned_private(st):
    """Why ``st`` may not be trusted (owner, others' write bits), or None."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is not None and st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def check_dir(d):
    """Why directory ``d`` may not hold libraries this process loads, or None."""
    try:
        st = os.lstat(d)
    except OSError as e:
        return f"cannot stat: {e}"
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(d)  # a link to a private directory of ours is fine
        except OSError as e:
            return f"dangling symlink: {e}"
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    return _owned_private(st)


def _record_path(path):
    return path + ".sha256"


def _read_record(path):
    """The SHA-256 recorded for library ``path`` at build time, or None."""
    rec = _record_path(path)
    try:
        fd = os.open(rec, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if _owned_private(os.fstat(fd)) is not None:
            return None
        text = os.read(fd, 4096).decode("ascii", "replace").split()
    finally:
        os.close(fd)
    if len(text) >= 2 and text[1] == os.path.basename(path) and len(text[0]) == 64:
        return text[0]
    return None


def _open_verified(path):
    """A descriptor open on ``path`` if it is our own regular file whose bytes hash to the
    recorded value; else None (missing, planted, truncated or corrupted)."""
    want = _read_record(path)
    if want is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and _owned_private(st) is None and _digest_fd(fd) == want:
            fd, keep = -1, fd
            return keep
        return None
    finally:
        if fd >= 0:
            os.close(fd)


# How OpenMP's idle threads wait, when the user chose nothing (OMP_WAIT_POLICY or
# GOMP_SPINCOUNT: theirs always wins).  The runtime reads these once, when it is loaded,
# which for ember is when its first C library loads.  libgomp's worker spins 1000 times
# (~45 us on the AMD EPYC here) after a parallel region, then sleeps on a futex: that
# covers the gap to the next region of an op chain (the Python between two kernels), and
# gives the core back soon after.  Its explicit count wins over PASSIVE, which keeps the
# oversubscribed case (more threads than cores) at no spin and LLVM's libomp (clang
# builds, which ignores GOMP_SPINCOUNT) passive.
# Measured per call at 2 threads, each library alone in its process, interleaved rounds,
# median wall of 11 rounds from 3 runs (torch: 7 rounds), the measuring session at
# autogroup nice -20 on the shared 2-core machine (close to a quiet one); us, or ms:
#                          torch   PASSIVE (0)   1000 spins
#   softmax 256x1024          86        189          157
#   gelu 4M                 1248       2968         2928
#   compiled layer_norm       70        108           51
#   compiled softmax         135        154           93
#   conv2d grads (7 rounds)  3920     10332         8848
#   lenet step (ms)          7.4       14.3          8.4
#   tiny GPT step (ms)        78         82           89  (gomp's spin against OpenBLAS)
# libgomp's default (300000 spins, 3 rounds): softmax 98, the GPT step 176 ms, lenet 45 ms.
# A busy loop holding one core: softmax 224 / 273 us (10000 spins: 658; 1 thread: 217).
# The machine loaded 5-8x over its 2 cores (other jobs, normal priority): softmax
# 710-900 / 990-1180 us (1 thread: 724), the compiled 256x1024 kernels 140 / 400-900 us;
# spinning policies (libgomp's default, ACTIVE, torch's) take ~20 ms there.
OPENMP_DEFAULTS = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000"}
OPENMP_USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def openmp_environ():
    """The variables ember sets while loading a library that brings in libgomp:
    ``OPENMP_DEFAULTS``, or nothing when the user set any of ``OPENMP_USER_SETTINGS``."""
    if any(k in os.environ for k in OPENMP_USER_SETTINGS):
        return {}
    return dict(OPENMP_DEFAULTS)


def _load(path, check):
    """ctypes handle of the verified library ``path``, or None when it fails verification,
    does not load or ``check`` rejects it."""
    fd = _open_verified(path)
    if fd is None:
        return None
    # load the very file that was hashed: a path could be swapped after the check
    target = f"/proc/self/fd/{fd}" if os.path.isdir("/proc/self/fd") else path
    chosen = openmp_environ()
    os.environ.update(chosen)  # for libgomp's constructor, if this load brings it in
    try:
        lib = ctypes.CDLL(target)
    except OSError:
        os.close(fd)
        return None
    finally:
        for k in chosen:
            os.environ.pop(k, None)
    # the dynamic loader now knows this library by the name /proc/self/fd/N and would hand
    # it back for any later dlopen of that name: the descriptor stays open, so that N is
    # never reused for another library (two libraries in one process, e.g. the eager one and
    # a compiled graph, would otherwise get the first one's code)
    _HELD_FDS.append(fd)
    try:
        return lib if check(lib) else None
    except AttributeError:
        return None


_HELD_FDS = []


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


_PRIVATE = []  # the fallback directory of this process, once made


def _private_dir():
    if not _PRIVATE:
        d = tempfile.mkdtemp(prefix="ember-kernels-")  # 0700, owned by us
        atexit.register(shutil.rmtree, d, True)
        _PRIVATE.append(d)
    return _PRIVATE[0]


def _usable_cache_dir():
    """``(directory, why the configured one was refused or None)``."""
    d = cache_dir()
    refused = None
    try:
        if not os.path.lexists(d):
            os.makedirs(d, mode=0o700, exist_ok=True)
            os.chmod(d, 0o700)  # makedirs' mode is masked by the umask
    except OSError as e:
        refused = f"cannot create the kernel cache directory {d}: {e}"
    if refused is None:
        why = check_dir(d)
        if why is None:
            return d, None
        refused = f"kernel cache directory {d} refused: {why}"
    try:
        return _private_dir(), refused + "; using a private temporary directory"
    except OSError as e:
        raise BuildError(f"{refused}; no private temporary directory either: {e}") from None


def build(name, source, check, variants, tag=""):
    """Load the library for ``source`` (compiling and caching it first if needed).

    ``check(lib)`` must return True for a usable library.  ``variants`` lists
    ``(flags, info)`` pairs tried in order (the first that builds and loads wins: OpenMP,
    then without its runtime); ``info`` is merged into the returned one, ``tag`` (the
    caller's build settings) joins the cache key.  Returns ``(lib, info)`` with ``info`` a
    dict (path, compiler, flags, compiled: whether this call compiled, cache_dir: the
    directory used, cache_refused: why the configured one was not, or None); raises
    `BuildError` with the reason when no library can be had."""
    cc = find_compiler()
    if cc is None:
        raise BuildError("no C compiler found (set $CC or put cc/gcc/clang on PATH)")
    d, refused = _usable_cache_dir()
    errors = []
    for flags, extra_info in variants:
        flags = tuple(flags)
        path = os.path.join(d, f"{name}-{_key(source, cc, flags, tag)}.so")
        info = {"path": path, "compiler": " ".join(cc), "flags": " ".join(flags),
                **extra_info, "compiled": False, "cache_dir": d, "cache_refused": refused}
        if os.path.lexists(path):
            lib = _load(path, check)
            if lib is not None:
                return lib, info
        with _Lock(path + ".lock"):
            # another process may have finished it while this one waited for the lock
            if os.path.lexists(path):
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
    if refused:
        errors.insert(0, refused)
    raise BuildError("\n".join(errors))


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        return _digest_fd(fd)
    finally:
        os.close(fd)


def _build_file(cc, flags, source, path, d):
    fd, tmp_so = tempfile.mkstemp(suffix=".so.tmp", dir=d)
    os.close(fd)
    src = tmp_so[:-len(".so.tmp")] + ".c"
    tmp_rec = tmp_so[:-len(".so.tmp")] + ".sha256.tmp"
    try:
        with open(src, "w") as f:
            f.write(source)
        err = _compile(cc, flags, src, tmp_so)
        if err is None:
            os.chmod(tmp_so, 0o700)  # the linker's mode follows the umask
            digest = _fsync_file(tmp_so)
            rfd = os.open(tmp_rec, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(rfd, "w") as f:
                f.write(f"{digest}  {os.path.basename(path)}\n")
                f.flush()
                os.fsync(f.fileno())
            # atomic renames: readers see the old file or the whole new one; a reader that
            # meets the new library with the old record fails the check and waits for the lock
            os.replace(tmp_so, path)
            os.replace(tmp_rec, _record_path(path))
            _fsync_dir(d)
        return err
    finally:
        for p in (src, tmp_so, tmp_rec):
            try:
                os.unlink(p)
            except OSError:
                pass


def _fsync_dir(d):
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def attempt(build_fn, *args):
    """``build_fn(*args)`` (a `build`), for a caller that falls back to NumPy: ``(lib, info,
    None)``, or ``(None, {}, reason)`` when no usable library could be made."""
    try:
        lib, info = build_fn(*args)
        return lib, info, None
    except BuildError as e:
        return None, {}, str(e)
    except Exception as e:  # noqa: BLE001 - any failure here means "use NumPy"
        return None, {}, f"{type(e).__name__}: {e}"
