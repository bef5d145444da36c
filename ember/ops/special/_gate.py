"""torch's dtype gating of the scipy.special kernels."""
import numpy as np

from .._helpers import _HALF, not_implemented


def gate(kernel, kname, *, complex_ok=False, half_ok=True, int_ok=True, n=1):
    """Raise torch's NotImplementedError for the dtypes ``kname`` has no kernel for."""
    def k(xp, *args, **params):
        for a in args[:n]:
            if type(a) is not np.ndarray:
                continue
            dt = a.dtype
            if (dt.kind == "c" and not complex_ok) or (dt in _HALF and not half_ok) or \
                    (dt.kind in "biu" and not int_ok):
                not_implemented(kname, dt)
        return kernel(xp, *args, **params)
    return k
