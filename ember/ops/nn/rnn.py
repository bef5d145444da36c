"""The recurrent layers' operators: fused cells and whole-layer loops.

``_lstm_cell`` and ``_gru_cell`` compute all gate nonlinearities and the state update
of one step in one NumPy kernel; their derivatives are written in ember ops.  When
every step has the same batch size, ``nn.functional`` runs an LSTM (without projections)
or GRU layer direction as one operator, ``_lstm_layer`` / ``_gru_layer``, whose kernel
runs all steps and keeps the gate activations; its derivative is always one
backward-through-time operator (``_lstm_layer_backward`` / ``_gru_layer_backward``), with
or without modes, so eager runs, traces and compiled graphs compute the same thing.  The
backward operators' own derivative (double backward, forward AD) is that of their
decompositions (`ember.ops.decomposition_vjp`), which recompute the gates from the inputs:
the saved activations are the kernel's cache and carry no gradient.
"""
import numpy as np

from ..._core.op import Op
from .. import _helpers as H
from .._batching import _batched_front
from ..decomposition_vjp import vjp_from_decomposition
from ..creation import zeros_like
from ..shape import cat
from ._rules import leading_rule

__all__ = []


def _f32(x):
    return x.astype(np.float32) if x.dtype in H._HALF else x


def _lstm_cell_kernel(xp, gates, c):
    dt = c.dtype
    g32, c32 = _f32(gates), _f32(c)
    n = c.shape[-1]
    sig = H.special(xp).expit
    i = sig(g32[..., :n])
    f = sig(g32[..., n:2 * n])
    g = xp.tanh(g32[..., 2 * n:3 * n])
    o = sig(g32[..., 3 * n:])
    c2 = f * c32 + i * g
    h = o * xp.tanh(c2)
    return h.astype(dt, copy=False), c2.astype(dt, copy=False)


def _lstm_cell_vjp(ctx, grads, gates, c):
    gh, gc = grads  # either may be None (its output received no gradient)
    _, c2 = ctx.out
    n = c.shape[-1]
    xi, xf, xg, xo = gates.split(n, -1)
    i, f, g, o = xi.sigmoid(), xf.sigmoid(), xg.tanh(), xo.sigmoid()
    if gh is None:
        dc2 = gc
        do = zeros_like(c2)
    else:
        tc = c2.tanh()
        dh = gh * o * (1 - tc * tc)
        dc2 = dh if gc is None else gc + dh
        do = gh * tc * o * (1 - o)
    dgates = cat([dc2 * g * i * (1 - i), dc2 * c * f * (1 - f), dc2 * i * (1 - g * g), do], -1)
    return dgates, dc2 * f


LSTM_CELL = Op("_lstm_cell", _lstm_cell_kernel, _lstm_cell_vjp, n_out=2, save_output=True,
               shape=lambda g, c: ((c.shape, c.dtype), (c.shape, c.dtype)), batch=leading_rule)


def _gru_cell_kernel(xp, gi, gh, h):
    dt = h.dtype
    gi, gh, h32 = _f32(gi), _f32(gh), _f32(h)
    n = h.shape[-1]
    rz = H.special(xp).expit(gi[..., :2 * n] + gh[..., :2 * n])
    r, z = rz[..., :n], rz[..., n:]
    nn_ = xp.tanh(gi[..., 2 * n:] + r * gh[..., 2 * n:])
    return ((1 - z) * nn_ + z * h32).astype(dt, copy=False)


def _gru_cell_vjp(ctx, g, gi, gh, h):
    n = h.shape[-1]
    rz = (gi[..., :2 * n] + gh[..., :2 * n]).sigmoid()
    r, z = rz.split(n, -1)
    ghn = gh[..., 2 * n:]
    nn_ = (gi[..., 2 * n:] + r * ghn).tanh()
    dn = g * (1 - z) * (1 - nn_ * nn_)
    dr = dn * ghn * r * (1 - r)
    dz = g * (h - nn_) * z * (1 - z)
    dgi = cat([dr, dz, dn], -1) if ctx.needs_input_grad[0] else None
    dgh = cat([dr, dz, dn * r], -1) if ctx.needs_input_grad[1] else None
    return dgi, dgh, g * z


GRU_CELL = Op("_gru_cell", _gru_cell_kernel, _gru_cell_vjp,
              shape=lambda gi, gh, h: (h.shape, h.dtype), batch=leading_rule)


# ---- whole-layer operators (uniform batch) ---------------------------------------------------

def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _lstm_layer_kernel(xp, xw, h0, c0, whhT, reverse):
    dt = h0.dtype
    # the weight in row-major order: the module passes w_hh.t(), a column-major view, and a
    # (batch x n) @ (n x 4n) product with a transposed operand costs ~1.7x per step
    xw, h, c, whhT = _f32(xw), _f32(h0), _f32(c0), xp.ascontiguousarray(_f32(whhT))
    T, n = xw.shape[0], h0.shape[-1]
    hs = xp.empty(xw.shape[:-1] + (n,), dtype=h.dtype)
    cs = xp.empty_like(hs)
    acts = xp.empty(xw.shape, dtype=h.dtype)
    # sigmoid(x) = (tanh(x / 2) + 1) / 2: one tanh call for all four gates
    half = xp.full(4 * n, 0.5, dtype=h.dtype)
    half[2 * n:3 * n] = 1
    shift = xp.where(half == 1, 0, 0.5).astype(h.dtype)
    for t in _steps(T, reverse):
        a = acts[t]
        xp.matmul(h, whhT, out=a)
        a += xw[t]
        a *= half
        xp.tanh(a, out=a)
        a *= half
        a += shift
        g = a[..., 2 * n:3 * n]
        c = a[..., n:2 * n] * c
        c += a[..., :n] * g
        h = xp.tanh(c)
        h *= a[..., 3 * n:]
        hs[t], cs[t] = h, c
    return hs.astype(dt, copy=False), cs.astype(dt, copy=False), acts


def _lstm_layer_bwd_kernel(xp, ghs, gcs, acts, hs, cs, xw, h0, c0, whhT, reverse):
    # xw is not read: acts holds the gates the forward computed from it; ghs or gcs is None
    # when that output received no gradient
    T, n = acts.shape[0], h0.shape[-1]
    f32 = acts.dtype
    ghs, gcs, hs, cs, h0, c0 = (None if a is None else _f32(a).astype(f32, copy=False)
                                for a in (ghs, gcs, hs, cs, h0, c0))
    whh = xp.ascontiguousarray(xp.swapaxes(_f32(whhT), -1, -2), dtype=f32)
    a4 = acts.reshape(acts.shape[:-1] + (4, n))
    i, f, g, o = a4[..., 0, :], a4[..., 1, :], a4[..., 2, :], a4[..., 3, :]
    tc = xp.tanh(cs)
    dc_dh = o * (1 - tc * tc)
    do_dh = tc * o * (1 - o)
    dgates_dc = xp.stack([g * i * (1 - i), _prev_states(xp, cs, c0, reverse) * f * (1 - f),
                          i * (1 - g * g)], -2)
    dG = xp.empty_like(acts)
    dG4 = dG.reshape(a4.shape)
    dh = xp.zeros_like(h0)
    dc = xp.zeros_like(c0)
    for t in reversed(list(_steps(T, reverse))):
        if ghs is not None:
            dh += ghs[t]
        if gcs is not None:
            dc += gcs[t]
        dc += dh * dc_dh[t]
        xp.multiply(dc[..., None, :], dgates_dc[t], out=dG4[t, ..., :3, :])
        xp.multiply(dh, do_dh[t], out=dG4[t, ..., 3, :])
        dh = xp.matmul(dG[t], whh)
        dc *= f[t]
    return dG, dh, dc, _weight_grad(xp, _prev_states(xp, hs, h0, reverse), dG)


def _weight_grad(xp, prev, dG):
    """sum over steps and batch rows of prev^T dG; leading dims between time and the batch
    rows (per-example weights under vmap) stay apart."""
    if prev.ndim == 3:
        return xp.matmul(prev.reshape(-1, prev.shape[-1]).T, dG.reshape(-1, dG.shape[-1]))
    return xp.einsum("t...bn,t...bm->...nm", prev, dG)


def _prev_states(xp, hs, h0, reverse):
    """The state each step starts from, in time order."""
    if reverse:
        return xp.concatenate([hs[1:], h0[None]], 0)
    return xp.concatenate([h0[None], hs[:-1]], 0)


def _layer_vjp(bwd_op, n_diff):
    """vjp of a whole-layer op: its backward op, given the output gradients (None for an
    output that received none), the saved activations and states, and the layer's inputs."""
    def vjp(ctx, grads, *inputs, reverse):
        need = ctx.needs_input_grad
        res = bwd_op(*grads[:n_diff], *ctx.out[n_diff:], *ctx.out[:n_diff], *inputs,
                     reverse=reverse)
        res = [r if n else None for r, n in zip(res, need)]
        # halves are differentiated in float32: each gradient in its input's dtype
        return tuple(r if r is None or r.dtype == x.dtype else r.to(x.dtype)
                     for r, x in zip(res, inputs))
    return vjp


def _f32_dtype(dt):
    from ..._core import dtype as _dt
    return _dt.float32 if dt.np in H._HALF else dt


def _layer_shape(n_gates, n_states):
    def shape(xw, h0, *rest, reverse):
        rows = tuple(xw.shape[:-1])  # time, [per-example weights' batch,] batch
        st = (rows + (h0.shape[-1],), h0.dtype)
        acts = (rows + (n_gates * h0.shape[-1],), _f32_dtype(h0.dtype))
        return (st,) * n_states + (acts,)
    return shape


def _bwd_shape(n_gates_in):
    """dgates (input side), d h0, [d c0,] d whhT and, for GRU, d b_hh."""
    def shape(*args, reverse):
        acts, h0, whhT, b_hh = (args[2], args[6], args[8], None) if n_gates_in == 4 else \
            (args[1], args[4], args[5], args[6])
        dt, n = acts.dtype, h0.shape[-1]
        res = [(tuple(acts.shape[:-1]) + (n_gates_in * n,), dt), (h0.shape, dt)]
        if n_gates_in == 4:
            res.append((h0.shape, dt))
        res.append((whhT.shape, dt))
        if n_gates_in == 3:
            res.append(((tuple(whhT.shape[:-2]) + (3 * n,) if b_hh is not None else (0,)), dt))
        return tuple(res)
    return shape


# ---- vmap: the vmap batch joins the layer's own batch B (one recurrence, V*B rows) ---------

def _fold(a, b, V, seq):
    """(V, [T,] B, X) -> ([T,] V*B, X)."""
    a = _batched_front(a, b, V)
    if seq:
        a = a.movedim(0, 1)
        return a.reshape((a.shape[0], V * a.shape[2]) + tuple(a.shape[3:]))
    return a.reshape((V * a.shape[1],) + tuple(a.shape[2:]))


def _unfold(a, V, B, seq):
    if seq:
        return a.reshape((a.shape[0], V, B) + tuple(a.shape[2:]))
    return a.reshape((V, B) + tuple(a.shape[1:]))


def _layer_batch(n_seq, n_state):
    """Inputs: n_seq (T, B, X) sequences, n_state (B, n) states, then the weights.  Shared
    weights: the vmap batch folds into B.  Per-example weights (each example its own
    recurrence matrix): the kernels take leading batch dims, (T, V, B, X) sequences,
    (V, B, n) states and (V, ...) weights, and every output keeps V."""
    def rule(op, args, bdims, params, batch_size):
        k = n_seq + n_state
        V = batch_size
        if any(b is not None for b in bdims[k:]):
            front = [None if a is None else _batched_front(a, b, V) for a, b in zip(args, bdims)]
            outs = op(*(None if a is None else a.movedim(0, 1) for a in front[:n_seq]),
                      *front[n_seq:], **params)
            if op is LSTM_LAYER or op is GRU_LAYER:  # every output is a sequence
                return outs, (1,) * len(outs)
            # the gate gradients, then states and weights (a bias-free GRU's empty d b_hh)
            return outs, (1,) + tuple(0 if o.ndim > 1 else None for o in outs[1:])
        # (an output gradient is None when that output received none)
        folded = [None if a is None else _fold(a, b, V, i < n_seq)
                  for i, (a, b) in enumerate(zip(args[:k], bdims))]
        B = folded[n_seq].shape[0] // V
        outs = op(*folded, *args[k:], **params)
        return _unfold_outs(op, outs, V, B, folded, args[k:], params)
    return rule


def _unfold_outs(op, outs, V, B, folded, weights, params):
    if op is LSTM_LAYER or op is GRU_LAYER:  # every output is a sequence
        return tuple(_unfold(o, V, B, True) for o in outs), (1,) * len(outs)
    # the backward's weight gradients sum over the whole (folded) batch: each example's
    # is recomputed from its gate gradients and the states each step started from
    T = outs[0].shape[0]  # (an output gradient, folded[0], may be None)
    if op is LSTM_LAYER_BACKWARD:
        dG, dh, dc, _ = outs
        hs, h0, dGH = folded[3], folded[6], dG
        states = (_unfold(dh, V, B, False), _unfold(dc, V, B, False))
    else:
        dGI, dh, _, _ = outs
        hs, h0 = folded[2], folded[4]
        n = h0.shape[-1]
        dGH = cat([dGI[..., :2 * n], dGI[..., 2 * n:] * folded[1][..., :n]], -1)
        dG, states = dGI, (_unfold(dh, V, B, False),)
    n = h0.shape[-1]
    h0 = h0.to(dGH.dtype)
    hs = hs.to(dGH.dtype)
    prev = cat([hs[1:], h0.unsqueeze(0)], 0) if params["reverse"] else \
        cat([h0.unsqueeze(0), hs[:-1]], 0)
    p = prev.reshape(T, V, B, n).permute(1, 3, 0, 2).reshape(V, n, T * B)
    g = dGH.reshape(T, V, B, dGH.shape[-1]).permute(1, 0, 2, 3).reshape(V, T * B, dGH.shape[-1])
    res = (_unfold(dG, V, B, True),) + states + (p.matmul(g),)
    if op is GRU_LAYER_BACKWARD:
        if weights[1] is not None:
            res += (g.sum(1),)
        else:
            res += (outs[3].reshape(1, 0).expand(V, 0),)
    return res, (1,) + (0,) * (len(res) - 1)


LSTM_LAYER_BACKWARD = Op("_lstm_layer_backward", _lstm_layer_bwd_kernel,
                         vjp_from_decomposition("_lstm_layer_backward"), n_out=4,
                         shape=_bwd_shape(4), batch=_layer_batch(6, 2))
LSTM_LAYER = Op("_lstm_layer", _lstm_layer_kernel, _layer_vjp(LSTM_LAYER_BACKWARD, 2), n_out=3,
                save_output=True, nondiff_outputs=(2,), shape=_layer_shape(4, 2),
                batch=_layer_batch(1, 2))


def _gru_layer_kernel(xp, xw, h0, whhT, b_hh, reverse):
    dt = h0.dtype
    xw, h, whhT = _f32(xw), _f32(h0), xp.ascontiguousarray(_f32(whhT))  # as in the LSTM's
    T, n = xw.shape[0], h0.shape[-1]
    sig = H.special(xp).expit
    hs = xp.empty(xw.shape[:-1] + (n,), dtype=h.dtype)
    acts = xp.empty(xw.shape[:-1] + (4 * n,), dtype=h.dtype)  # r, z, n, h @ W_hn + b_hn
    # per-example biases (vmap) broadcast over the batch rows
    b = None if b_hh is None else _f32(b_hh) if b_hh.ndim == 1 else _f32(b_hh)[..., None, :]
    for t in _steps(T, reverse):
        a = acts[t]
        gh = xp.matmul(h, whhT)
        if b is not None:
            gh += b
        a[..., :2 * n] = sig(xw[t, ..., :2 * n] + gh[..., :2 * n])
        a[..., 3 * n:] = gh[..., 2 * n:]
        a[..., 2 * n:3 * n] = xp.tanh(xw[t, ..., 2 * n:] + a[..., :n] * gh[..., 2 * n:])
        z, nn_ = a[..., n:2 * n], a[..., 2 * n:3 * n]
        h = nn_ + z * (h - nn_)
        hs[t] = h
    return hs.astype(dt, copy=False), acts


def _gru_layer_bwd_kernel(xp, ghs, acts, hs, xw, h0, whhT, b_hh, reverse):
    # xw is not read: acts holds what the forward computed from it
    T, n = acts.shape[0], h0.shape[-1]
    f32 = acts.dtype
    ghs, hs, h0 = (_f32(a).astype(f32, copy=False) for a in (ghs, hs, h0))
    whh = xp.ascontiguousarray(xp.swapaxes(_f32(whhT), -1, -2), dtype=f32)
    prev = _prev_states(xp, hs, h0, reverse)
    dGI = xp.empty(acts.shape[:-1] + (3 * n,), dtype=f32)
    dGH = xp.empty_like(dGI)
    dh = xp.zeros_like(h0)
    for t in reversed(list(_steps(T, reverse))):
        a = acts[t]
        r, z, nn_, ghn = a[..., :n], a[..., n:2 * n], a[..., 2 * n:3 * n], a[..., 3 * n:]
        dh = dh + ghs[t]
        dn = dh * (1 - z) * (1 - nn_ * nn_)
        dGI[t, ..., :n] = dn * ghn * r * (1 - r)
        dGI[t, ..., n:2 * n] = dh * (prev[t] - nn_) * z * (1 - z)
        dGI[t, ..., 2 * n:] = dn
        dGH[t, ..., :2 * n] = dGI[t, ..., :2 * n]
        dGH[t, ..., 2 * n:] = dn * r
        dh = dh * z + xp.matmul(dGH[t], whh)
    db = dGH.sum((0, dGH.ndim - 2)) if b_hh is not None else xp.zeros(0, dtype=f32)
    return dGI, dh, _weight_grad(xp, prev, dGH), db


GRU_LAYER_BACKWARD = Op("_gru_layer_backward", _gru_layer_bwd_kernel,
                        vjp_from_decomposition("_gru_layer_backward"), n_out=4,
                        shape=_bwd_shape(3), batch=_layer_batch(4, 1))
GRU_LAYER = Op("_gru_layer", _gru_layer_kernel, _layer_vjp(GRU_LAYER_BACKWARD, 1), n_out=2,
               save_output=True, nondiff_outputs=(1,), shape=_layer_shape(4, 1),
               batch=_layer_batch(1, 1))


# forward mode derives these tangents from the vjp: it is written in differentiable ember ops
from ..._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "_lstm_cell", "_gru_cell", "_lstm_layer", "_gru_layer",
                 "_lstm_layer_backward", "_gru_layer_backward")
