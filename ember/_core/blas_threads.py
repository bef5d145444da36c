"""ember's BLAS threading policy: small products and small LAPACK factorizations run
single-threaded.

OpenBLAS threads every GEMM it can; for small products the threads' wake-up and
spin-waiting cost more than they save, and when the machine is busy (a data-loader
worker, another process) a 40-microsecond product can take 15 ms.  Products below
``SMALL_MACS`` multiply-adds therefore run with one BLAS thread (the thread count is
restored right after, so ``set_num_threads`` / threadpoolctl limits still govern large
products).  Measured on 2 cores with one busy: (128x64)@(64x256) 14.6 ms -> 54 us.

LAPACK's SVD and symmetric eigensolvers (and least squares) are thousands of level-2 BLAS
calls, each a barrier for OpenBLAS's threads: with a core busy elsewhere every barrier waits
for a descheduled thread, and on this 2-core machine, under load, two threads cost 10-30x
the CPU time of one (SVD of 64x64: 0.46 -> 12.8 ms; eigh 0.29 -> 5.7 ms; SVD of 256x128 at
2 threads 2.2 -> 170 ms wall).  Their kernels (``small_lapack``) therefore run every OpenBLAS
pool (NumPy's and SciPy's) at one thread for matrices with ``m*n*min(m, n)`` under
``SMALL_LAPACK``.  LU and Cholesky (blocked, few barriers) showed no such cost and keep
their threads.

Large products keep OpenBLAS's threads, unless they collapse: when another process holds a
core, every threaded GEMM waits at OpenBLAS's barriers for a descheduled thread, and a
0.2 ms product takes tens of milliseconds (a tiny GPT training step at 2 threads beside a
load of 11 on 2 cores: 1.1-1.9 s wall and 0.5-0.6 s CPU, against 0.16-0.44 s wall and
0.09 s CPU with one BLAS thread).  `matmul` therefore times each large product: the
first one of each pair of dtypes runs on one thread and sets the best single-threaded time
per multiply-add; two threaded products in a row slower than ``COLLAPSE`` times that rate
(one alone may be the wake-up of OpenBLAS's sleeping threads) send large products to one
thread for ``HOLD_MIN`` seconds, doubling (up to ``HOLD_MAX``) while each
retry collapses again and reset by a threaded product that did not.  Uncontended (load ~2
on 2 cores, ember's own threads included) a threaded product takes 0.35-0.8 of the
single-threaded rate (a tiny GPT step's products, the rate set by its best-shaped one), a
wake-up about 2.5; collapses measured 4-80.
"""
import functools
import os
import time

import numpy as np

__all__ = ["matmul", "num_threads", "openmp_threads", "single_threaded", "small_lapack",
           "SMALL_MACS", "SMALL_LAPACK"]

SMALL_MACS = 1 << 23  # ~8M multiply-adds: about 1 ms single-threaded
SMALL_LAPACK = 1 << 30  # m*n*min(m, n) of one matrix: up to 1024x1024
_get = _set = None  # NumPy's OpenBLAS pool
_loaded = False
_pools = None  # (get, set) of every OpenBLAS loaded once SciPy's LAPACK is
_forked = False  # this process is a fork child: libgomp's thread pool did not survive


def _after_fork():
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _controls(lc):
    """``(get_num_threads, set_num_threads)`` of one threadpoolctl OpenBLAS controller."""
    for prefix, suffix in (("scipy_openblas_", "64_"), ("openblas_", "64_"),
                           ("scipy_openblas_", ""), ("openblas_", "")):
        s = getattr(lc.dynlib, f"{prefix}set_num_threads{suffix}", None)
        g = getattr(lc.dynlib, f"{prefix}get_num_threads{suffix}", None)
        if s is not None and g is not None:
            return g, s
    return None


def _openblas():
    from threadpoolctl import ThreadpoolController
    return [lc for lc in ThreadpoolController().lib_controllers
            if lc.internal_api == "openblas"]


def _load():
    global _get, _set, _loaded
    _loaded = True
    try:
        for lc in _openblas():
            c = _controls(lc) if "numpy" in lc.filepath else None
            if c is not None:
                _get, _set = c
                return
    except Exception:  # noqa: BLE001 - no control over this BLAS: leave its threading alone
        pass


def _load_pools():
    global _pools
    try:
        import scipy.linalg  # noqa: F401 - loads SciPy's OpenBLAS, listed only once loaded
        _pools = [c for c in map(_controls, _openblas()) if c is not None]
    except Exception:  # noqa: BLE001 - no control over these BLAS: leave their threading alone
        _pools = []
    return _pools


def num_threads():
    """The BLAS pool's thread count (ember's intra-op thread count), read in a
    fraction of a microsecond; the CPU count when the pool cannot be read."""
    if not _loaded:
        _load()
    return max(1, int(_get())) if _get is not None else (os.cpu_count() or 1)


def openmp_threads():
    """OpenMP threads for one C kernel call (eager ``ckernels`` and compiled graphs):
    ``num_threads()``, so OpenMP and BLAS never oversubscribe the cores, and 1 in a forked
    child, where libgomp's pool of the parent is gone and a parallel region would wait on
    threads that do not exist.  Each caller decides first whether its work is worth a
    parallel region (``ckernels.PARALLEL_SIZE``, ``config.parallel_min_work``)."""
    return 1 if _forked else num_threads()


def single_threaded(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with every OpenBLAS pool (NumPy's and SciPy's) at one
    thread; their counts are restored afterwards."""
    pools = _pools if _pools is not None else _load_pools()
    prev = [g() for g, _ in pools]
    for (_, s), p in zip(pools, prev):
        if p != 1:
            s(1)
    try:
        return fn(*args, **kwargs)
    finally:
        for (_, s), p in zip(pools, prev):
            if p != 1:
                s(p)


def small_lapack(kernel):
    """Decorate a LAPACK kernel ``kernel(xp, a, ...)`` to run single-threaded (see the
    module docstring) when the matrices of ``a`` are small."""
    @functools.wraps(kernel)
    def run(xp, a, *args, **kwargs):
        if xp is np and a.ndim >= 2:
            m, n = a.shape[-2:]
            if m * n * min(m, n) < SMALL_LAPACK:
                return single_threaded(kernel, xp, a, *args, **kwargs)
        return kernel(xp, a, *args, **kwargs)
    return run


def matmul(xp, a, b, out=None):
    """``xp.matmul(a, b, out=out)``, single-threaded in BLAS when the product is small, or
    while threaded products are collapsing (see `_large`)."""
    if xp is np and b.ndim > 1:
        if not _loaded:
            _load()
        if _set is not None:
            macs = a.size * b.shape[-1]
            prev = _get()
            if prev != 1:
                if macs < SMALL_MACS:
                    _set(1)
                    try:
                        return np.matmul(a, b, out=out)
                    finally:
                        _set(prev)
                return _large(a, b, out, macs, prev)
    return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)


# Back-off for large products (see the module docstring): the best single-threaded time per
# multiply-add seen for each pair of dtypes, and until when large products run on one thread
COLLAPSE = 4.0  # a threaded product slower than this many single-threaded ones collapsed
HOLD_MIN, HOLD_MAX = 0.25, 4.0  # seconds on one thread after a collapse; doubles per repeat
_clock = time.perf_counter
_rate = {}
_hold_until = 0.0
_hold = HOLD_MIN
_strikes = 0  # threaded products in a row slower than COLLAPSE single-threaded ones


def _large(a, b, out, macs, prev):
    global _hold_until, _hold, _strikes
    key = (a.dtype.char, b.dtype.char)
    best = _rate.get(key)
    start = _clock()
    single = best is None or start < _hold_until  # the first one measures one thread
    if single:
        _set(1)
    try:
        r = np.matmul(a, b, out=out)
    finally:
        if single:
            _set(prev)
    rate = (_clock() - start) / macs
    if single:
        if best is None or rate < best:
            _rate[key] = rate
    elif rate > COLLAPSE * best:
        # two in a row: the first threaded product after an idle spell wakes OpenBLAS's
        # sleeping threads (~2x a single-threaded one), which is no collapse
        _strikes += 1
        if _strikes >= 2:
            _strikes = 0
            _hold_until = start + _hold
            _hold = min(2 * _hold, HOLD_MAX)
    else:
        _strikes = 0
        _hold = HOLD_MIN
    return r
