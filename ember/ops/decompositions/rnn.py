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


def _prev_all(seq, first, reverse):
    """The state each step starts from, for all steps at once (in time order)."""
    T = seq.shape[0]
    first = reshape(first, (1,) + tuple(first.shape))
    if reverse:
        return _cat0(slice_dim(seq, 0, 1, T), first)
    return _cat0(first, slice_dim(seq, 0, 0, T - 1))


def _cat0(a, b):
    return prim.cat(a, b, dim=0, sizes=(a.shape[0], b.shape[0]))


def _T(x):
    return prim.permute(x, dims=(1, 0))


def _rows(x):
    """(T, B, X) -> (T*B, X)."""
    return reshape(x, (x.shape[0] * x.shape[1], x.shape[2]))


def _mul(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = prim.mul(out, x)
    return out


# Everything that does not depend on the gradient flowing back through time (the gates,
# their derivatives, the states each step started from) is computed for all steps at once;
# the loop carries only the state gradients, as the fused kernels do.

@decomposes("_lstm_layer_backward")
def _lstm_layer_backward(ghs, gcs, acts, hs, cs, xw, h0, c0, whhT, reverse):
    T, n = acts.shape[0], h0.shape[-1]
    f32 = acts.dtype
    if T == 0:
        return (full(tuple(acts.shape), 0, f32), full(tuple(h0.shape), 0, f32),
                full(tuple(c0.shape), 0, f32), full(tuple(whhT.shape), 0, f32))
    # ghs or gcs is None when that output of the layer received no gradient
    ghs, gcs, hs, cs, xw, h0, c0 = (None if a is None else cast(a, f32)
                                    for a in (ghs, gcs, hs, cs, xw, h0, c0))
    whhT = cast(whhT, f32)
    whh = _T(whhT)
    hp = _prev_all(hs, h0, reverse)
    i, f, g, o = _lstm_gates(prim.add(prim.matmul(hp, whhT), xw), n)
    tc = prim.tanh(cs)
    dc_dh = prim.mul(o, _one_minus(prim.mul(tc, tc)))
    do_dh = _mul(tc, o, _one_minus(o))
    dgates_dc = _cat_last(_mul(g, i, _one_minus(i)),
                          _mul(_prev_all(cs, c0, reverse), f, _one_minus(f)),
                          prim.mul(i, _one_minus(prim.mul(g, g))))
    dG = [None] * T
    dh = full(tuple(h0.shape), 0, f32)
    dc = full(tuple(c0.shape), 0, f32)
    for t in reversed(list(_steps(T, reverse))):
        if ghs is not None:
            dh = prim.add(dh, _at(ghs, t))
        if gcs is not None:
            dc = prim.add(dc, _at(gcs, t))
        dc = prim.add(dc, prim.mul(dh, _at(dc_dh, t)))
        dG[t] = _cat_last(prim.mul(_cat_last(dc, dc, dc), _at(dgates_dc, t)),
                          prim.mul(dh, _at(do_dh, t)))
        dh = prim.matmul(dG[t], whh)
        dc = prim.mul(dc, _at(f, t))
    dGs = _stack0(dG)
    return dGs, dh, dc, prim.matmul(_T(_rows(hp)), _rows(dGs))


@decomposes("_gru_layer_backward")
def _gru_layer_backward(ghs, acts, hs, xw, h0, whhT, b_hh, reverse):
    T, n = acts.shape[0], h0.shape[-1]
    f32 = acts.dtype
    empty_db = full((0,), 0, f32)
    if T == 0:
        return (full(tuple(acts.shape[:2]) + (3 * n,), 0, f32), full(tuple(h0.shape), 0, f32),
                full(tuple(whhT.shape), 0, f32), full((3 * n,), 0, f32) if b_hh is not None
                else empty_db)
    ghs, hs, xw, h0 = (cast(a, f32) for a in (ghs, hs, xw, h0))
    whhT = cast(whhT, f32)
    whh = _T(whhT)
    hp = _prev_all(hs, h0, reverse)
    gh = prim.matmul(hp, whhT)
    if b_hh is not None:
        gh = prim.add(gh, _f32(b_hh))
    _, (r, z, nn_, ghn) = _gru_step(xw, gh, hp)
    dn_dh = prim.mul(_one_minus(z), _one_minus(prim.mul(nn_, nn_)))
    dr_dn = _mul(ghn, r, _one_minus(r))
    dz_dh = _mul(prim.sub(hp, nn_), z, _one_minus(z))
    dGI, dGH = [None] * T, [None] * T
    dh = full(tuple(h0.shape), 0, f32)
    for t in reversed(list(_steps(T, reverse))):
        dh = prim.add(dh, _at(ghs, t))
        dn = prim.mul(dh, _at(dn_dh, t))
        dr = prim.mul(dn, _at(dr_dn, t))
        dz = prim.mul(dh, _at(dz_dh, t))
        dGI[t] = _cat_last(dr, dz, dn)
        dGH[t] = _cat_last(dr, dz, prim.mul(dn, _at(r, t)))
        dh = prim.add(prim.mul(dh, _at(z, t)), prim.matmul(dGH[t], whh))
    dGHs = _rows(_stack0(dGH))
    db = prim.sum(dGHs, dims=(0,), keepdim=False) if b_hh is not None else empty_db
    return _stack0(dGI), dh, prim.matmul(_T(_rows(hp)), dGHs), db
