"""Batching rules of the matmul family (ember/ops/blas.py sets them as its ops' ``batch``).

The kernels already batch over leading dimensions, so the vmap batch becomes one more
leading dimension; vectors are promoted to matrices where a batched vector would
otherwise be taken for a matrix.
"""
from .._core.tensor import Tensor
from ._batching import _batched_front, _front_padded, _logical_ndim, _move_to_front


def _matmul_rule(op, args, bdims, params, batch_size):
    a, b = args
    ba, bb = bdims
    la, lb = _logical_ndim(a, ba), _logical_ndim(b, bb)
    a = _move_to_front(a, ba)
    b = _move_to_front(b, bb)
    if la == 1 and lb == 1:
        if ba is not None and bb is not None:
            return (a * b).sum(-1), 0
        return (op(a, b) if ba is not None else op(b, a)), 0
    if lb == 1 and bb is not None:
        # a batch of vectors on the right: make them matrices, multiply, drop the column
        if ba is None:
            r = op(a, b.unsqueeze(-1).unsqueeze(1) if la > 2 else b.unsqueeze(-1))
            return r.squeeze(-1), 0 if la <= 2 else 0
        a = a if la >= 2 else a.unsqueeze(1)
        pad = (1,) * (la - 2) if la > 2 else ()
        bm = b.reshape((b.shape[0],) + pad + (b.shape[1], 1))
        return op(a, bm).squeeze(-1), 0
    if la == 1 and ba is not None:
        am = a.unsqueeze(1) if lb <= 2 else a.reshape((a.shape[0],) + (1,) * (lb - 2) +
                                                        (1, a.shape[1]))
        return op(am, b).squeeze(-2), 0
    if ba is not None and bb is not None:
        top = max(la, lb)
        a = a.reshape((a.shape[0],) + (1,) * (top - la) + tuple(a.shape[1:]))
        b = b.reshape((b.shape[0],) + (1,) * (top - lb) + tuple(b.shape[1:]))
        return op(a, b), 0
    if ba is not None:
        if lb > la:
            a = a.reshape((a.shape[0],) + (1,) * (lb - la) + tuple(a.shape[1:]))
        return op(a, b), 0
    # only b batched, a a matrix (or higher)
    if la > lb:
        b = b.reshape((b.shape[0],) + (1,) * (la - lb) + tuple(b.shape[1:]))
    return op(a, b), 0


def _addmm_rule(op, args, bdims, params, batch_size):
    inp, m1, m2 = args
    kind, beta, alpha = params["kind"], params.get("beta", 1), params.get("alpha", 1)
    a = _batched_front(m1, bdims[1], batch_size)
    b = _batched_front(m2, bdims[2], batch_size)
    if kind == "r":
        p = a.unsqueeze(-1) * b.unsqueeze(-2)
        from ._helpers import promote_np
        from .._core.dtype import FROM_NP
        dt = FROM_NP[promote_np(inp._data, m1._data, m2._data)] if isinstance(inp, Tensor) \
            else p.dtype
    else:
        dt = inp.dtype
        half = dt.itemsize == 2 and dt.is_floating_point
        if half:
            a, b = a.float(), b.float()
        p = (a @ b.unsqueeze(-1)).squeeze(-1) if kind == "mv" else a @ b
        if kind == "addbmm":
            p = p.sum(1)
    if alpha != 1:
        p = p * alpha
    if beta != 0:
        i = inp
        if bdims[0] is not None:
            i = _front_padded([p, inp], [0, bdims[0]])[1]
        i = i.to(p.dtype)
        p = p + (i if beta == 1 else i * beta)
    return p.to(dt), 0


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _einsum_rule(op, args, bdims, params, batch_size):
    eq = params["equation"]
    lhs, out = eq.split("->")
    z = next(c for c in _LETTERS if c not in eq)
    terms = lhs.split(",")
    phys = []
    for t, a, b in zip(terms, args, bdims):
        phys.append(_move_to_front(a, b))
    new = ",".join(z + t if b is not None else t for t, b in zip(terms, bdims))
    return op(*phys, equation=f"{new}->{z}{out}"), 0


def _cross_rule(op, args, bdims, params, batch_size):
    a, b = _front_padded(list(args[:2]), list(bdims[:2]))
    top = max(_logical_ndim(x, d) for x, d in zip(args[:2], bdims[:2]))
    d = params["dim"]
    return op(a, b, *args[2:], dim=d - top if d >= 0 else d), 0
