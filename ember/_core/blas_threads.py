"""ember's BLAS threading policy: small products run single-threaded.

OpenBLAS threads every GEMM it can; for small products the threads' wake-up and
spin-waiting cost more than they save, and when the machine is busy (a data-loader
worker, another process) a 40-microsecond product can take 15 ms.  Products below
``SMALL_MACS`` multiply-adds therefore run with one BLAS thread (the thread count is
restored right after, so ``set_num_threads`` / threadpoolctl limits still govern large
products).  Measured on 2 cores with one busy: (128x64)@(64x256) 14.6 ms -> 54 us.
"""
import numpy as np

__all__ = ["matmul", "SMALL_MACS"]

SMALL_MACS = 1 << 23  # ~8M multiply-adds: about 1 ms single-threaded
_get = _set = None
_loaded = False


def _load():
    global _get, _set, _loaded
    _loaded = True
    try:
        from threadpoolctl import ThreadpoolController
        for lc in ThreadpoolController().lib_controllers:
            if lc.internal_api != "openblas" or "numpy" not in lc.filepath:
                continue
            for prefix, suffix in (("scipy_openblas_", "64_"), ("openblas_", "64_"),
                                   ("openblas_", "")):
                s = getattr(lc.dynlib, f"{prefix}set_num_threads{suffix}", None)
                g = getattr(lc.dynlib, f"{prefix}get_num_threads{suffix}", None)
                if s is not None and g is not None:
                    _get, _set = g, s
                    return
    except Exception:  # noqa: BLE001 - no control over this BLAS: leave its threading alone
        pass


def matmul(xp, a, b, out=None):
    """``xp.matmul(a, b, out=out)``, single-threaded in BLAS when the product is small."""
    if xp is np and b.ndim > 1:
        if not _loaded:
            _load()
        if _set is not None and a.size * b.shape[-1] < SMALL_MACS:
            prev = _get()
            if prev != 1:
                _set(1)
                try:
                    return np.matmul(a, b, out=out)
                finally:
                    _set(prev)
    return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)
