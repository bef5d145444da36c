"""Kernel-side helpers of the linalg operators: LAPACK routines by dtype, batch loops over
the routines NumPy does not batch, and the ``info`` codes torch reports (raw arrays only;
the argument checks and error messages of the public functions live in ember.linalg)."""
import numpy as np


def lapack(prefix, dt):
    """The scipy LAPACK routine ``prefix`` for dtype ``dt`` (s/d/c/z), taking NumPy arrays
    only."""
    from scipy.linalg import lapack as lp
    c = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[np.dtype(dt).name]
    routine = getattr(lp, c + prefix)

    def call(*args, **kwargs):
        # f2py releases the dtype once too often when it fails to convert an argument
        # (NumPy's fortranobject.c), so another backend's array never reaches it
        for a in args:
            if not isinstance(a, (np.ndarray, np.generic, int, float, complex)):
                raise TypeError(f"LAPACK {c + prefix} runs on NumPy arrays; got "
                                f"{type(a).__name__}: this operator has no kernel for that "
                                f"backend")
        return routine(*args, **kwargs)
    return call


def batched(fn, a, *others):
    """Apply ``fn`` (matrix -> tuple of arrays) to every matrix of the batch of ``a``
    (and the matching matrices of ``others``, broadcast already); stack the results."""
    bs = a.shape[:-2]
    n = int(np.prod(bs)) if bs else 1
    af = a.reshape((n,) + a.shape[-2:])
    of = [o.reshape((n,) + o.shape[len(bs):]) for o in others]
    res = [fn(af[i], *[o[i] for o in of]) for i in range(n)]
    if not res:
        return None
    outs = []
    for k in range(len(res[0])):
        s = np.stack([np.asarray(r[k]) for r in res])
        outs.append(s.reshape(bs + s.shape[1:]))
    return outs


def getrf_info(a):
    """LAPACK getrf info per matrix of the batch ``a`` (0 when U has no zero pivot)."""
    f = lapack("getrf", a.dtype)
    r = batched(lambda m: (f(m)[2],), a)
    return r[0] if r is not None else np.zeros(a.shape[:-2], np.int32)

