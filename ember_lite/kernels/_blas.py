"""Matrix products with a small-product threading policy.

OpenBLAS threads every GEMM; for small products on a busy machine the threads' wake-up
and spin-waiting cost more than the product (a 32x64 by 64x256 product measured 0.7 ms
threaded against 13 us on one thread).  Products below ``SMALL_MACS`` multiply-adds run
with one BLAS thread when threadpoolctl (optional) can reach NumPy's OpenBLAS; the thread
count is restored right after."""
import contextlib

import numpy as np

__all__ = ["matmul", "threads_for"]

SMALL_MACS = 1 << 23
_threads = None  # (get, set) of NumPy's OpenBLAS, () when out of reach


def _find():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return ()
    for lib in ThreadpoolController().lib_controllers:
        if lib.internal_api != "openblas" or "numpy" not in lib.filepath:
            continue
        for name in ("scipy_openblas_{}_num_threads64_", "openblas_{}_num_threads64_",
                     "openblas_{}_num_threads"):
            get = getattr(lib.dynlib, name.format("get"), None)
            put = getattr(lib.dynlib, name.format("set"), None)
            if get is not None and put is not None:
                return get, put
    return ()


@contextlib.contextmanager
def threads_for(macs):
    """One BLAS thread inside the block when the product(s) it runs take fewer than
    `SMALL_MACS` multiply-adds (and NumPy's OpenBLAS is reachable); the count is restored
    after."""
    global _threads
    if _threads is None:
        try:
            _threads = _find()
        except Exception:  # noqa: BLE001 - no control over this BLAS: leave it alone
            _threads = ()
    prev = None
    if _threads and macs < SMALL_MACS:
        get, put = _threads
        prev = get()
        if prev != 1:
            put(1)
        else:
            prev = None
    try:
        yield
    finally:
        if prev is not None:
            _threads[1](prev)


def matmul(a, b):
    if b.ndim > 1:
        with threads_for(a.size * b.shape[-1]):
            return np.matmul(a, b)
    return np.matmul(a, b)
