"""torch's dtype gating of the scipy.special kernels."""
import numpy as np

from .._helpers import _HALF, not_implemented, promote_np


def gate(kernel, kname, *, complex_ok=False, half_ok=True, int_ok=True, n=1):
    """Raise torch's NotImplementedError for the dtypes ``kname`` has no kernel for, judged
    on the promoted dtype of the first ``n`` arguments (igamma(float, int) computes in
    float; igamma(int, int) is refused)."""
    def k(xp, *args, **params):
        if not any(type(a) is np.ndarray for a in args[:n]):
            return kernel(xp, *args, **params)
        dt = args[0].dtype if n == 1 else promote_np(*args[:n])
        if (dt.kind == "c" and not complex_ok) or (dt in _HALF and not half_ok) or \
                (dt.kind in "biu" and not int_ok):
            not_implemented(kname, dt)
        return kernel(xp, *args, **params)
    return k
