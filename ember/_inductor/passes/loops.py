"""Pass 4b, loops: merge adjacent loop dims every access walks contiguously (a contiguous
(64, 1024) pointwise kernel becomes one loop of 65536), so the inner loop is long enough to
vectorise and parallelise well."""
from .. import ir
from .. import sizes as _sizes

__all__ = ["coalesce"]


def _affines(kernel):
    out = [s.index for s in kernel.stores]
    for s in kernel.stores:
        for e in ir.walk(s.value):
            if isinstance(e, (ir.Load, ir.Iota)):
                out.append(e.index)
    return out


def _mergeable(kernel, d):
    if kernel.reduced[d] != kernel.reduced[d + 1]:
        return False
    nxt = kernel.space[d + 1]
    return all(_sizes.key(a.coeffs[d]) == _sizes.key(_sizes.mul(a.coeffs[d + 1], nxt))
               for a in _affines(kernel))


def _drop(a, d):
    return ir.Affine(a.coeffs[:d] + a.coeffs[d + 1:], a.offset)


def _rebuild(e, d, memo):
    r = memo.get(e)
    if r is not None:
        return r
    if isinstance(e, ir.Load):
        r = ir.Load(e.buf, _drop(e.index, d), e.storage, e.dtype)
    elif isinstance(e, ir.Iota):
        r = ir.Iota(_drop(e.index, d), e.start, e.step, e.dtype)
    elif isinstance(e, ir.Apply):
        r = ir.Apply(e.fn, tuple(_rebuild(a, d, memo) for a in e.args), e.dtype)
    elif isinstance(e, ir.Cast):
        r = ir.Cast(_rebuild(e.x, d, memo), e.dtype, e.round_to)
    elif isinstance(e, ir.Reduce):
        r = ir.Reduce(e.kind, _rebuild(e.x, d, memo), e.dtype)
    else:
        r = e
    memo[e] = r
    return r


def coalesce(kernel):
    """Merge dims in place, from the innermost out."""
    d = len(kernel.space) - 2
    while d >= 0:
        if _mergeable(kernel, d):
            memo = {}
            kernel.stores = [ir.Store(s.buf, _drop(s.index, d), _rebuild(s.value, d, memo),
                                      s.storage) for s in kernel.stores]
            sp = kernel.space
            kernel.space = sp[:d] + (_sizes.mul(sp[d], sp[d + 1]),) + sp[d + 2:]
            kernel.reduced = kernel.reduced[:d] + kernel.reduced[d + 1:]
        d -= 1
    return kernel
