"""BLAS-level composites (addmm family, einsum, cdist) over ``matmul``, and the linalg
helpers that are not LAPACK calls themselves.  The LAPACK and FFT operators are extern
primitives (see `ember.ops.primitives`)."""
import numpy as np

from ..._core import dtype as _dt
from . import decomposes
from ._util import cast, const, expand_as_shape, full, prim, reshape, slice_dim

_HALVES = ("float16", "bfloat16")


def _compute_dtype(d):
    return _dt.float32 if d.name in _HALVES else d


@decomposes("addmm")
def _addmm(inp, m1, m2, kind, beta=1, alpha=1):
    dt = _dt.promote_types(_dt.promote_types(inp.dtype, m1.dtype), m2.dtype) if kind == "r" \
        else inp.dtype
    cdt = _compute_dtype(dt)
    a, b = cast(m1, cdt), cast(m2, cdt)
    if kind == "r":
        p = prim.mul(reshape(a, (a.shape[0], 1)), reshape(b, (1, b.shape[0])))
    else:
        p = prim.matmul(a, b)
        if kind == "addbmm":
            p = prim.sum(p, dims=(0,), keepdim=False)
    if alpha != 1:
        p = prim.mul(p, alpha)
    if beta != 0:
        i = cast(inp, cdt)
        p = prim.add(p, i if beta == 1 else prim.mul(i, beta))
    return cast(p, dt)


@decomposes("einsum")
def _einsum(*ops, equation):
    lhs, out = equation.replace(" ", "").split("->")
    terms = lhs.split(",")
    dt = ops[0].dtype
    work = _compute_dtype(dt)
    if not (dt.is_floating_point or dt.is_complex):
        work = _dt.int64
    sizes = {}
    aligned = []
    letters = []
    for t, o in zip(terms, ops):
        for c, n in zip(t, o.shape):
            if n != 1 or c not in sizes:
                sizes[c] = n
        for c in t:
            if c not in letters:
                letters.append(c)
    order = [c for c in out] + [c for c in letters if c not in out]
    for t, o in zip(terms, ops):
        x = cast(o, work)
        # a letter repeated in one term selects a diagonal
        while len(set(t)) < len(t):
            c = next(c for c in t if t.count(c) > 1)
            i, j = t.index(c), t.index(c, t.index(c) + 1)
            x = REGISTRY_DIAG(x, i, j)
            t = t[:i] + t[i + 1:j] + t[j + 1:] + c
        perm = sorted(range(len(t)), key=lambda k: order.index(t[k]))
        x = prim.permute(x, dims=tuple(perm)) if perm != list(range(len(t))) else x
        present = [t[k] for k in perm]
        shape = [x.shape[present.index(c)] if c in present else 1 for c in order]
        aligned.append(reshape(x, shape))
    full_shape = tuple(sizes[c] for c in order)
    acc = aligned[0]
    for x in aligned[1:]:
        acc = prim.mul(acc, x)
    acc = expand_as_shape(acc, full_shape)
    red = tuple(range(len(out), len(order)))
    r = prim.sum(acc, dims=red, keepdim=False) if red else acc
    # integers: int64 where an operand has private dims (torch sums those first), else
    # the input dtype, wrapping as its own arithmetic would
    private = any(sum(c in t for t in terms) == 1 and c not in out for c in letters)
    return cast(r, _dt.int64 if private and not (dt.is_floating_point or dt.is_complex) and
                dt.name not in _HALVES else dt)


def REGISTRY_DIAG(x, i, j):
    from .shape import _diagonal
    return _diagonal(x, 0, i, j)


@decomposes("cdist")
def _cdist(x1, x2, p, mm):
    dt = x1.dtype
    a, b = cast(x1, _compute_dtype(dt)), cast(x2, _compute_dtype(dt))
    if mm:
        n1 = prim.sum(prim.mul(a, a), dims=(a.ndim - 1,), keepdim=True)
        n2 = prim.sum(prim.mul(b, b), dims=(b.ndim - 1,), keepdim=True)
        n2 = prim.permute(n2, dims=tuple(range(b.ndim - 2)) + (b.ndim - 1, b.ndim - 2))
        bt = prim.permute(b, dims=tuple(range(b.ndim - 2)) + (b.ndim - 1, b.ndim - 2))
        d2 = prim.sub(prim.add(n1, n2), prim.mul(prim.matmul(a, bt), 2))
        return cast(prim.sqrt(prim.maximum(d2, 0)), dt)
    xa = reshape(a, tuple(a.shape[:-1]) + (1, a.shape[-1]))
    xb = reshape(b, tuple(b.shape[:-2]) + (1,) + tuple(b.shape[-2:]))
    diff = prim.abs(prim.sub(xa, xb))
    last = diff.ndim - 1
    if diff.shape[-1] == 0:
        return full(diff.shape[:-1], 0, dt)
    if p == 0:
        r = prim.sum(cast(prim.ne(diff, 0), diff.dtype), dims=(last,), keepdim=False)
    elif p == 1:
        r = prim.sum(diff, dims=(last,), keepdim=False)
    elif p == 2:
        r = prim.sqrt(prim.sum(prim.mul(diff, diff), dims=(last,), keepdim=False))
    elif p == float("inf"):
        r = prim.amax(diff, dims=(last,), keepdim=False)
    else:
        r = prim.pow(prim.sum(prim.pow(diff, p), dims=(last,), keepdim=False), 1.0 / p)
    return cast(r, dt)


@decomposes("linalg_matrix_rank")
def _matrix_rank(s, smax, atol, rtol, m, n):
    # pinv's tolerance: max(atol, rtol * smax), rtol defaulting to eps * max(m, n) (0 when
    # only atol is given and positive)
    if rtol is None:
        rtol = float(np.finfo(s.dtype.np).eps) * max(m, n)
        if atol is not None:
            rtol = prim.where(prim.gt(atol, 0), 0.0, const(rtol, s.dtype))
    at = 0.0 if atol is None else atol
    tol = prim.maximum(cast(const(at), s.dtype) if not hasattr(at, "shape") else at,
                       prim.mul(rtol, smax))
    tol = reshape(tol, tuple(tol.shape) + (1,))
    return prim.sum(prim.gt(s, tol), dims=(s.ndim - 1,), keepdim=False)


@decomposes("_fft_resize")
def _fft_resize(x, dims, sizes):
    out = x
    for d, n in zip(dims, sizes):
        have = out.shape[d]
        if n < have:
            out = slice_dim(out, d, 0, n)
        elif n > have:
            out = prim.pad(out, pads=((d, 0, n - have),), mode="constant", value=0.0)
    return prim._to_copy(out, dtype=out.dtype.np) if out is x else out




@decomposes("_linalg_det_backward")
def _linalg_det_backward(g, a, det):
    # every path computed, one picked per matrix by where: conj(det) A^{-H} on a stand-in
    # for the singular ones, which take the SVD formula (the product of the other singular
    # values) computed on a regular stand-in for the others
    from .reduction import _prod_others
    n, dt = a.shape[-1], a.dtype
    rdt = prim.abs(det).dtype
    sing = prim.lt(prim.abs(det), 100 * float(np.finfo(rdt.np).eps))
    sing = reshape(sing, tuple(sing.shape) + (1, 1))
    gd = prim.mul(g, prim.conj(det))
    inv = prim.linalg_inv_ex(prim.where(sing, const(np.eye(n), dt), a))[0]
    regular = prim.mul(reshape(gd, tuple(gd.shape) + (1, 1)), prim.conj(mT(inv)))
    spread = const(np.diag(np.arange(1, n + 1)), dt)
    u, s_, vh = prim.linalg_svd(prim.where(sing, a, spread), full_matrices=False)
    alpha = prim.conj(prim.mul(prim.linalg_det(u), prim.linalg_det(vh)))
    ga = prim.mul(g, alpha)
    dd = prim.mul(reshape(ga, tuple(ga.shape) + (1,)), cast(_prod_others(s_, s_.ndim - 1), dt))
    dd = reshape(dd, tuple(dd.shape[:-1]) + (1, n))
    return prim.where(sing, prim.matmul(prim.mul(u, dd), vh), regular)


def mT(x):
    order = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return prim.permute(x, dims=order)
