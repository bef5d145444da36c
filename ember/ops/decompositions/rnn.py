"""Recurrent cells and layers, unrolled over time into matmul and pointwise primitives.

The sequence length is static in a traced graph, so a layer is T copies of its cell; the
backward layers are the same recursion run in reverse.  Gate order and the saved
activations (``acts``) follow the fused kernels exactly, so each output matches.  The
backward layers recompute the gates from the layer's input and the states each step
started from instead of reading ``acts``: their derivative is the backward ops' own
(`ember.ops.decomposition_vjp`), and it must reach the input, which ``acts`` (a
non-differentiable output of the forward) would cut off.
"""
from ..._core import dtype as _dt
from . import decomposes
from ._util import cast, full, prim, reshape, slice_dim

_HALVES = ("float16", "bfloat16")


def _f32(x):
    return cast(x, _dt.float32) if x is not None and x.dtype.name in _HALVES else x


def _cdt(x):
    return _dt.float32 if x.dtype.name in _HALVES else x.dtype


def _part(x, k, n):
    """Gate block k (of width n) along the last dim."""
    return slice_dim(x, x.ndim - 1, k * n, (k + 1) * n)


def _cat_last(*xs):
    return prim.cat(*xs, dim=xs[0].ndim - 1, sizes=tuple(x.shape[-1] for x in xs))


def _one_minus(x):
    return prim.sub(1, x)


def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _at(seq, t):
    return prim.select(seq, key=(t,))


def _stack0(items):
    return prim.cat(*[reshape(x, (1,) + tuple(x.shape)) for x in items], dim=0,
                    sizes=tuple(1 for _ in items))


def _lstm_gates(gates, n):
    return (prim.sigmoid(_part(gates, 0, n)), prim.sigmoid(_part(gates, 1, n)),
            prim.tanh(_part(gates, 2, n)), prim.sigmoid(_part(gates, 3, n)))


def _lstm_step(gates, c):
    i, f, g, o = _lstm_gates(gates, c.shape[-1])
    c2 = prim.add(prim.mul(f, c), prim.mul(i, g))
    return prim.mul(o, prim.tanh(c2)), c2, (i, f, g, o)


@decomposes("_lstm_cell")
def _lstm_cell(gates, c):
    h, c2, _ = _lstm_step(_f32(gates), _f32(c))
    return cast(h, c.dtype), cast(c2, c.dtype)


def _gru_step(gi, gh, h):
    n = h.shape[-1]
    rz = prim.sigmoid(prim.add(slice_dim(gi, gi.ndim - 1, 0, 2 * n),
                               slice_dim(gh, gh.ndim - 1, 0, 2 * n)))
    r, z = _part(rz, 0, n), _part(rz, 1, n)
    ghn = _part(gh, 2, n)
    nn_ = prim.tanh(prim.add(_part(gi, 2, n), prim.mul(r, ghn)))
    return prim.add(nn_, prim.mul(z, prim.sub(h, nn_))), (r, z, nn_, ghn)


@decomposes("_gru_cell")
def _gru_cell(gi, gh, h):
    out, _ = _gru_step(_f32(gi), _f32(gh), _f32(h))
    return cast(out, h.dtype)


@decomposes("_lstm_layer")
def _lstm_layer(xw, h0, c0, whhT, reverse):
    dt = h0.dtype
    xw, h, c, whhT = _f32(xw), _f32(h0), _f32(c0), _f32(whhT)
    T = xw.shape[0]
    hs, cs, acts = [None] * T, [None] * T, [None] * T
    for t in _steps(T, reverse):
        gates = prim.add(prim.matmul(h, whhT), _at(xw, t))
        h, c, (i, f, g, o) = _lstm_step(gates, c)
        hs[t], cs[t], acts[t] = h, c, _cat_last(i, f, g, o)
    if T == 0:
        n = h0.shape[-1]
        empty = full((0,) + tuple(xw.shape[1:2]) + (n,), 0, dt)
        return empty, empty, full(tuple(xw.shape), 0, _cdt(h0))
    return cast(_stack0(hs), dt), cast(_stack0(cs), dt), _stack0(acts)


@decomposes("_gru_layer")
def _gru_layer(xw, h0, whhT, b_hh, reverse):
    dt = h0.dtype
    xw, h, whhT = _f32(xw), _f32(h0), _f32(whhT)
    T = xw.shape[0]
    hs, acts = [None] * T, [None] * T
    for t in _steps(T, reverse):
        gh = prim.matmul(h, whhT)
        if b_hh is not None:
            gh = prim.add(gh, _f32(b_hh))
        h, (r, z, nn_, ghn) = _gru_step(_at(xw, t), gh, h)
        hs[t], acts[t] = h, _cat_last(r, z, nn_, ghn)
    if T == 0:
        n = h0.shape[-1]
        return full((0,) + tuple(xw.shape[1:2]) + (n,), 0, dt), \
            full((0,) + tuple(xw.shape[1:2]) + (4 * n,), 0, _cdt(h0))
    return cast(_stack0(hs), dt), _stack0(acts)


def _prev(seq, first, t, reverse):
    p = t + 1 if reverse else t - 1
    return first if p < 0 or p >= seq.shape[0] else _at(seq, p)


def _T(x):
    return prim.permute(x, dims=(1, 0))


@decomposes("_lstm_layer_backward")
def _lstm_layer_backward(ghs, gcs, acts, hs, cs, xw, h0, c0, whhT, reverse):
    T, n = acts.shape[0], h0.shape[-1]
    f32 = acts.dtype
    ghs, gcs, hs, cs, xw, h0, c0 = (cast(a, f32) for a in (ghs, gcs, hs, cs, xw, h0, c0))
    whhT = cast(whhT, f32)
    whh = _T(whhT)
    dG = [None] * T
    dh = full(tuple(h0.shape), 0, f32)
    dc = full(tuple(c0.shape), 0, f32)
    dw = full(tuple(whhT.shape), 0, f32)
    for t in reversed(list(_steps(T, reverse))):
        hp = _prev(hs, h0, t, reverse)
        i, f, g, o = _lstm_gates(prim.add(prim.matmul(hp, whhT), _at(xw, t)), n)
        tc = prim.tanh(_at(cs, t))
        dh = prim.add(dh, _at(ghs, t))
        dc = prim.add(dc, _at(gcs, t))
        dc = prim.add(dc, prim.mul(dh, prim.mul(o, _one_minus(prim.mul(tc, tc)))))
        cp = _prev(cs, c0, t, reverse)
        dG[t] = _cat_last(prim.mul(dc, prim.mul(prim.mul(g, i), _one_minus(i))),
                          prim.mul(dc, prim.mul(prim.mul(cp, f), _one_minus(f))),
                          prim.mul(dc, prim.mul(i, _one_minus(prim.mul(g, g)))),
                          prim.mul(dh, prim.mul(prim.mul(tc, o), _one_minus(o))))
        dw = prim.add(dw, prim.matmul(_T(hp), dG[t]))
        dh = prim.matmul(dG[t], whh)
        dc = prim.mul(dc, f)
    dGs = _stack0(dG) if T else full(tuple(acts.shape), 0, f32)
    return dGs, dh, dc, dw


@decomposes("_gru_layer_backward")
def _gru_layer_backward(ghs, acts, hs, xw, h0, whhT, b_hh, reverse):
    T, n = acts.shape[0], h0.shape[-1]
    f32 = acts.dtype
    ghs, hs, xw, h0 = (cast(a, f32) for a in (ghs, hs, xw, h0))
    whhT = cast(whhT, f32)
    whh = _T(whhT)
    dGI = [None] * T
    dh = full(tuple(h0.shape), 0, f32)
    dw = full(tuple(whhT.shape), 0, f32)
    db = full((3 * n,), 0, f32)
    for t in reversed(list(_steps(T, reverse))):
        hp = _prev(hs, h0, t, reverse)
        gh = prim.matmul(hp, whhT)
        if b_hh is not None:
            gh = prim.add(gh, _f32(b_hh))
        _, (r, z, nn_, ghn) = _gru_step(_at(xw, t), gh, hp)
        dh = prim.add(dh, _at(ghs, t))
        dn = prim.mul(prim.mul(dh, _one_minus(z)), _one_minus(prim.mul(nn_, nn_)))
        dr = prim.mul(prim.mul(dn, ghn), prim.mul(r, _one_minus(r)))
        dz = prim.mul(prim.mul(dh, prim.sub(hp, nn_)), prim.mul(z, _one_minus(z)))
        dGI[t] = _cat_last(dr, dz, dn)
        dgh = _cat_last(dr, dz, prim.mul(dn, r))
        dw = prim.add(dw, prim.matmul(_T(hp), dgh))
        db = prim.add(db, prim.sum(dgh, dims=(0,), keepdim=False))
        dh = prim.add(prim.mul(dh, z), prim.matmul(dgh, whh))
    dGIs = _stack0(dGI) if T else full(tuple(acts.shape[:2]) + (3 * n,), 0, f32)
    if b_hh is None:
        db = full((0,), 0, f32)
    return dGIs, dh, dw, db

