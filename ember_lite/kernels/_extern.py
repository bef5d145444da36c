"""The extern primitives: sorting and searching, data-dependent shapes, LAPACK (NumPy's
linalg, SciPy's LAPACK wrappers where NumPy lacks a routine) and FFT (numpy.fft)."""
import numpy as np

__all__ = ["EXTERN"]

_F32 = np.dtype(np.float32)


def _w(x):
    return x.astype(_F32) if x.dtype.kind == "V" or x.dtype == np.float16 else x


def _real_dtype(a):
    return np.abs(a[..., :0, :0]).dtype


# ---- sorting and searching -------------------------------------------------------------
def _order(x, dim, descending):
    """Stable sorting permutation along ``dim`` (NaN largest)."""
    w = _w(x)
    if not descending:
        return np.argsort(w, axis=dim, kind="stable")
    i = np.argsort(np.flip(w, dim), axis=dim, kind="stable")  # equal keys keep their order
    return (x.shape[dim] - 1) - np.flip(i, dim)


def _sort(dt, x, dim, descending=False):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    i = _order(x, dim, descending)
    return np.take_along_axis(x, i, axis=dim), i


def _topk(dt, x, k, dim, largest=True):
    x1 = x.reshape(1) if x.ndim == 0 else x
    i = np.take(_order(x1, dim, largest), np.arange(k), axis=dim)
    v = np.take_along_axis(x1, i, axis=dim)
    if x.ndim == 0:
        return (v.reshape(()), i.reshape(())) if k else (v, i)
    return v, i


def _searchsorted(dt, seq, values, sorter, side="left", out_int32=False):
    v = np.asarray(values)
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, axis=-1)
    if seq.ndim == 1:
        return np.searchsorted(seq, v, side=side)
    s2, v2 = seq.reshape(-1, seq.shape[-1]), v.reshape(-1, v.shape[-1])
    return np.stack([np.searchsorted(s2[k], v2[k], side=side)
                     for k in range(s2.shape[0])]).reshape(v.shape)


# ---- data-dependent shapes ---------------------------------------------------------------
def _unique(dt, x, dim=None):
    w = _w(x)
    if dim is None:
        v, inv, cnt = np.unique(w.reshape(-1), return_inverse=True, return_counts=True,
                                equal_nan=False)
        return v.astype(x.dtype), inv.reshape(x.shape), cnt
    if x.shape[dim] == 0:
        return x.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
    v, inv, cnt = np.unique(w, return_inverse=True, return_counts=True, axis=dim,
                            equal_nan=False)
    return v.astype(x.dtype), inv.reshape(-1), cnt


def _unique_consecutive(dt, x, dim=None):
    m = x.reshape(-1) if dim is None else np.moveaxis(x, dim, 0)
    new = np.ones(m.shape[0], bool)
    if m.shape[0]:
        new[1:] = (m[1:] != m[:-1]).reshape(m.shape[0] - 1, -1).any(axis=1)
    v = m[new] if dim is None else np.moveaxis(m[new], 0, dim)
    inv = np.cumsum(new) - 1
    cnt = np.diff(np.append(np.flatnonzero(new), new.size))
    return np.ascontiguousarray(v), inv.reshape(x.shape if dim is None else -1), cnt


def _bincount(dt, x, weights, minlength=0):
    if weights is None:
        return np.bincount(x, minlength=minlength)
    return np.bincount(x, weights=weights.astype(np.float64), minlength=minlength)


def _histogram_one(x, bins, edges_in, weight, rng, density):
    comp = np.float32 if x.dtype.itemsize < 4 else x.dtype
    xf = x.reshape(-1).astype(comp)
    if edges_in is None:
        if rng is not None:
            lo, hi = float(rng[0]), float(rng[1])
        elif xf.size:
            lo, hi = float(xf.min()), float(xf.max())
        else:
            lo, hi = 0.0, 1.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, bins + 1).astype(comp)
    else:
        edges = edges_in.reshape(-1).astype(comp)
    nb = edges.size - 1
    pos = np.searchsorted(edges, xf, side="right") - 1
    pos[xf == edges[-1]] = nb - 1  # the last bin is closed on the right
    keep = (xf >= edges[0]) & (xf <= edges[-1]) & (pos >= 0) & (pos < nb)
    w = None if weight is None else weight.reshape(-1).astype(np.float64)[keep]
    hist = np.bincount(pos[keep], weights=w, minlength=max(nb, 0))[:max(nb, 0)]
    hist = hist.astype(np.float64)
    if density:
        hist = hist / (hist.sum() * np.diff(edges.astype(np.float64)))
    return hist.astype(x.dtype), edges.astype(x.dtype)


def _histogram(dt, x, edges, weight, bins=None, range=None, density=False, nbatch=0):
    if nbatch == 0:
        return _histogram_one(x, bins, edges, weight, range, density)
    lead = x.shape[:nbatch]
    n = int(np.prod(lead))
    xs = x.reshape((n,) + x.shape[nbatch:])
    es = None if edges is None else np.broadcast_to(
        edges, lead + edges.shape[nbatch:]).reshape((n,) + edges.shape[nbatch:])
    ws = None if weight is None else np.broadcast_to(weight, x.shape).reshape(xs.shape)
    outs = [_histogram_one(xs[i], bins, None if es is None else es[i],
                           None if ws is None else ws[i], range, density) for i in np.arange(n)]
    return (np.stack([o[0] for o in outs]).reshape(lead + outs[0][0].shape),
            np.stack([o[1] for o in outs]).reshape(lead + outs[0][1].shape))


# ---- LAPACK ------------------------------------------------------------------------------
def _lapack(prefix, dt):
    from scipy.linalg import lapack
    return getattr(lapack, {"float32": "s", "float64": "d", "complex64": "c",
                            "complex128": "z"}[np.dtype(dt).name] + prefix)


def _batched(fn, a, *others):
    """``fn`` per matrix of the batch of ``a`` (and the matching ``others``); stacked."""
    bs = a.shape[:-2]
    n = int(np.prod(bs)) if bs else 1
    af = a.reshape((n,) + a.shape[-2:])
    of = [o.reshape((n,) + o.shape[len(bs):]) for o in others]
    res = [fn(af[i], *[o[i] for o in of]) for i in range(n)]
    return [np.stack([np.asarray(r[k]) for r in res]).reshape(bs + np.shape(res[0][k]))
            for k in range(len(res[0]))]


def _info(a):
    f = _lapack("getrf", a.dtype)
    return _batched(lambda m: (f(m)[2],), a)[0].astype(np.int32) if a.size else \
        np.zeros(a.shape[:-2], np.int32)


def _cholesky_ex(dt, a, upper):
    if upper:
        a = np.conj(np.swapaxes(a, -1, -2))
    try:
        return np.linalg.cholesky(a), np.zeros(a.shape[:-2], np.int32)
    except np.linalg.LinAlgError:
        f = _lapack("potrf", a.dtype)
        low, info = _batched(lambda m: f(m, lower=1, clean=1)[:2], a)
        return np.tril(low), info


def _trsm(a, b, upper, unit):
    import scipy.linalg as sl
    bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = np.broadcast_to(a, bs + a.shape[-2:])
    bb = np.broadcast_to(b, bs + b.shape[-2:])
    if ab.size == 0 or bb.size == 0:
        return np.zeros(bs + b.shape[-2:], a.dtype)
    return _batched(lambda m, r: (sl.solve_triangular(m, r, lower=not upper,
                                                      unit_diagonal=unit),), ab, bb)[0]


def _cholesky_solve(dt, b, l, upper):  # noqa: E741 - torch's name
    lh = np.conj(np.swapaxes(l, -1, -2))
    if upper:  # A = U^H U
        return _trsm(l, _trsm(lh, b, False, False), True, False)
    return _trsm(lh, _trsm(l, b, False, False), True, False)


def _eigh(dt, a, uplo):
    if a.size == 0:
        return np.zeros(a.shape[:-1], _real_dtype(a)), np.zeros(a.shape, a.dtype) + \
            np.eye(a.shape[-1], dtype=a.dtype)
    return np.linalg.eigh(a, UPLO=uplo)


def _inv_ex(dt, a):
    info = _info(a)
    if not info.any():
        return np.linalg.inv(a), info
    safe = np.where(info[..., None, None] != 0, np.eye(a.shape[-1], dtype=a.dtype), a)
    return np.where(info[..., None, None] != 0, np.nan, np.linalg.inv(safe)), info


def _solve_ex(dt, a, b):
    info = _info(a)
    bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if not info.any():
        return np.linalg.solve(a, b), np.broadcast_to(info, bs)
    bad = np.broadcast_to(info, bs)[..., None, None] != 0
    safe = np.where(bad, np.eye(a.shape[-1], dtype=a.dtype), np.broadcast_to(a, bs + a.shape[-2:]))
    return np.where(bad, np.nan, np.linalg.solve(safe, b)), info


def _ldl_factor_ex(dt, a, hermitian):
    n = a.shape[-1]
    if a.size == 0:
        return a.copy(), np.zeros(a.shape[:-1], np.int32), np.zeros(a.shape[:-2], np.int32)
    f = _lapack("hetrf" if hermitian and a.dtype.kind == "c" else "sytrf", a.dtype)
    ld, piv, info = _batched(lambda x: f(x, lower=1, lwork=max(64 * n, 1)), a)
    return np.tril(ld), piv, info


def _ldl_solve(dt, ld, piv, b, hermitian):
    f = _lapack("hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs", ld.dtype)
    bs = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    if b.size == 0 or ld.shape[-1] == 0:
        return np.zeros(bs + b.shape[-2:], b.dtype)
    return _batched(lambda m, p, r: (f(m, p, r, lower=1)[0],),
                    np.broadcast_to(ld, bs + ld.shape[-2:]),
                    np.broadcast_to(piv, bs + piv.shape[-1:]),
                    np.broadcast_to(b, bs + b.shape[-2:]))[0]


def _lstsq(dt, a, b, rcond, driver):
    import scipy.linalg as sl
    m, n = a.shape[-2:]
    bs = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ab = np.ascontiguousarray(np.broadcast_to(a, bs + a.shape[-2:]))
    bb = np.ascontiguousarray(np.broadcast_to(b, bs + b.shape[-2:]))
    rdt = _real_dtype(a)
    if rcond is None:
        rcond = float(np.finfo(rdt).eps) * max(m, n)

    def one(x, y):
        if driver == "gels":
            r = _lapack("gels", x.dtype)(x, y if m >= n else np.concatenate(
                [y, np.zeros((n - m, y.shape[1]), y.dtype)]))
            return r[1][:n], np.zeros((), np.int64), np.zeros((0,), rdt)
        sol, _, rank, sv = sl.lstsq(x, y, cond=rcond, lapack_driver=driver,
                                    check_finite=False)
        return sol, np.asarray(rank, np.int64), np.zeros((0,), rdt) if sv is None else sv
    if ab.size == 0 or bb.size == 0 or min(m, n) == 0:
        x, rank, sv = (np.zeros(bs + (n, b.shape[-1]), a.dtype), np.zeros(bs, np.int64),
                       np.zeros(bs + (min(m, n),), rdt))
    else:
        x, rank, sv = _batched(one, ab, bb)
    full = driver == "gels" or bool(np.all(rank == n))
    resid = (np.abs(ab @ x - bb) ** 2).sum(-2) if m > n and driver != "gelsy" and full else \
        np.zeros((0,), rdt)
    if driver == "gels":
        rank = np.zeros((0,), np.int64)
    if driver not in ("gelsd", "gelss"):
        sv = np.zeros((0,), rdt)
    return x, resid, rank, sv


def _lu_factor_ex(dt, a):
    k = min(a.shape[-2:])
    if a.size == 0:
        return (a.copy(), np.broadcast_to(np.arange(1, k + 1, dtype=np.int32),
                                          a.shape[:-2] + (k,)).copy(),
                np.zeros(a.shape[:-2], np.int32))
    lu, piv, info = _batched(_lapack("getrf", a.dtype), a)
    return lu, piv + 1, info


def _lu_pivots_to_perm(dt, piv, m, dtype):
    pf = piv.reshape(-1, piv.shape[-1]) - 1
    out = np.zeros((pf.shape[0], m, m), dtype)
    for b in range(pf.shape[0]):
        perm = np.arange(m)
        for i, j in enumerate(pf[b]):
            perm[i], perm[j] = perm[j], perm[i]
        out[b, perm, np.arange(m)] = 1
    return out.reshape(piv.shape[:-1] + (m, m))


def _matrix_exp(dt, a):
    import scipy.linalg as sl
    return a.copy() if a.size == 0 else sl.expm(a)


def _tols(a, s_max, atol, rtol):
    if rtol is None:
        rtol = np.finfo(_real_dtype(a)).eps * max(a.shape[-2:])
        if atol is not None:
            rtol = np.where(np.asarray(atol) > 0, 0.0, rtol)
    return np.maximum(0.0 if atol is None else np.asarray(atol), np.asarray(rtol) * s_max)


def _pinv(dt, a, atol, rtol, hermitian):
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.zeros(a.shape[:-2] + (n, m), a.dtype)
    if hermitian:
        w, v = np.linalg.eigh(a)
        aw = np.abs(w)
        cut = _tols(a, aw.max(-1), atol, rtol)[..., None]
        winv = np.where(aw > cut, 1 / np.where(aw > cut, w, 1), 0).astype(v.dtype)
        return (v * winv[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    cut = _tols(a, s[..., 0], atol, rtol)[..., None]
    sinv = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0).astype(s.dtype)
    return (np.conj(np.swapaxes(vh, -1, -2)) * sinv[..., None, :]) @ \
        np.conj(np.swapaxes(u, -1, -2))


def _qr(dt, a, mode):
    m, n = a.shape[-2:]
    if a.size == 0:
        k = m if mode == "complete" else min(m, n)
        q = np.zeros(a.shape[:-2] + ((m, k) if mode != "r" else (0,)), a.dtype)
        if mode != "r" and k:
            q[...] = np.eye(m, k, dtype=a.dtype)
        return q, np.zeros(a.shape[:-2] + (k if mode != "r" else min(m, n), n), a.dtype)
    if mode == "r":
        return np.zeros((0,), a.dtype), np.linalg.qr(a, mode="r")
    return tuple(np.linalg.qr(a, mode=mode))


def _svd(dt, a, full_matrices):
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        um, vn = (m, n) if full_matrices else (k, k)
        return (np.zeros(a.shape[:-2] + (m, um), a.dtype) + np.eye(m, um, dtype=a.dtype),
                np.zeros(a.shape[:-2] + (k,), _real_dtype(a)),
                np.zeros(a.shape[:-2] + (vn, n), a.dtype) + np.eye(vn, n, dtype=a.dtype))
    if a.ndim == 2:  # gesdd, as ember's eager kernel, so the signs of the vectors agree
        import scipy.linalg as sl
        return sl.svd(a, full_matrices=full_matrices, check_finite=False,
                      lapack_driver="gesdd")
    return tuple(np.linalg.svd(a, full_matrices=full_matrices))


def _eig(dt, a):
    if a.size == 0:
        return np.zeros(a.shape[:-1], dt[0]), np.zeros(a.shape, dt[1])
    return tuple(np.linalg.eig(a))


# ---- FFT ---------------------------------------------------------------------------------
_FWD_NORM = {"none": "backward", "n": "forward", "sqrt": "ortho"}
_BWD_NORM = {"none": "forward", "n": "backward", "sqrt": "ortho"}


def _fft_c2c(dt, x, dims, scale, forward):
    import scipy.fft as sf
    if not dims:
        return x
    return (sf.fftn if forward else sf.ifftn)(x, axes=dims,
                                              norm=(_FWD_NORM if forward else _BWD_NORM)[scale])


def _fft_r2c(dt, x, dims, scale, last_n):
    import scipy.fft as sf
    return sf.rfftn(x, axes=dims, norm=_FWD_NORM[scale])


def _fft_c2r(dt, x, dims, scale, last_n):
    import scipy.fft as sf
    s = [x.shape[d] for d in dims[:-1]] + [last_n]
    return sf.irfftn(x, s=s, axes=dims, norm=_BWD_NORM[scale])


EXTERN = {
    "sort": _sort, "topk": _topk, "searchsorted": _searchsorted,
    "nonzero": lambda dt, x: np.argwhere(x), "unique": _unique,
    "unique_consecutive": _unique_consecutive, "bincount": _bincount,
    "histogram": _histogram,
    "linalg_cholesky_ex": _cholesky_ex,
    "linalg_det": lambda dt, a: np.asarray(np.linalg.det(a)),
    "linalg_eig": _eig, "linalg_eigh": _eigh,
    "linalg_eigvals": lambda dt, a: np.linalg.eigvals(a),
    "linalg_eigvalsh": lambda dt, a, uplo: np.linalg.eigvalsh(a, UPLO=uplo),
    "linalg_inv_ex": _inv_ex, "linalg_ldl_factor_ex": _ldl_factor_ex,
    "linalg_ldl_solve": _ldl_solve, "linalg_lstsq": _lstsq,
    "linalg_lu_factor_ex": _lu_factor_ex, "linalg_matrix_exp": _matrix_exp,
    "linalg_pinv": _pinv, "linalg_qr": _qr,
    "linalg_slogdet": lambda dt, a: tuple(np.asarray(r) for r in np.linalg.slogdet(a)),
    "linalg_solve_ex": _solve_ex,
    "linalg_solve_triangular": lambda dt, a, b, upper, unit: _trsm(a, b, upper, unit),
    "linalg_svd": _svd,
    "linalg_svdvals": lambda dt, a: np.linalg.svd(a, compute_uv=False),
    "cholesky_solve": _cholesky_solve, "_lu_pivots_to_perm": _lu_pivots_to_perm,
    "_fft_c2c": _fft_c2c, "_fft_r2c": _fft_r2c, "_fft_c2r": _fft_c2r,
}
