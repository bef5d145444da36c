"""Fused optimizer updates in functional form.

The eager ops write params and state in place and return nothing; a compiled graph has no
in-place writes, so each decomposition returns the new value of every input instead (one
entry per input, None for the inputs only read: the gradients).  The arithmetic follows
the kernels step by step (lerp's two branches, addcmul/addcdiv with a scalar ``value``).
The step counter is a tensor: bias corrections are computed from it in float64, as the
kernels compute them from its Python value.
"""
from ..._core import dtype as _dt
from . import FUNCTIONALIZED, decomposes
from ._util import cast, numel, prim, reshape, slice_dim


def _split(arrays, n, k):
    return [list(arrays[i * n:(i + 1) * n]) for i in range(k)]


def _real(t):
    return prim.view_as_real(t) if t.dtype.is_complex else t


def _back(new, old):
    """``new`` (computed on the real view) in ``old``'s shape and dtype."""
    if old.dtype.is_complex:
        new = prim.view_as_complex(cast(new, old.dtype.to_real()))
    return cast(new, old.dtype)


def _grad(x, g, maximize, weight_decay):
    g = _real(g)
    if maximize:
        g = prim.neg(g)
    if weight_decay != 0:
        g = prim.add(prim.mul(x, weight_decay), g)
    return g


def _lerp(a, b, w):
    d = prim.sub(b, a)
    if abs(w) < 0.5:
        return prim.add(a, prim.mul(d, w))
    return prim.sub(b, prim.mul(d, 1 - w))


def _addcmul(a, b, c, value):
    return prim.add(a, prim.mul(prim.mul(b, value), c))


def _addcdiv(a, b, c, value):
    return prim.add(a, prim.mul(prim.div(b, c), value))


def _incr(step):
    return prim.add(step, 1)


def _f64(t):
    return cast(t, _dt.float64)


def _out(n, *lists):
    """One entry per input: the new lists in input order, None for the gradients."""
    params, rest = lists[0], lists[1:]
    out = list(params) + [None] * n
    for lst in rest:
        out += lst
    return tuple(out)


@decomposes("_sgd_step")
def _sgd_step(*arrays, n, lr, momentum, dampening, weight_decay, nesterov, maximize,
              fresh=()):
    lists = _split(arrays, n, 3 if momentum != 0 else 2)
    params, grads = lists[0], lists[1]
    new_p, new_b = [], []
    for i in range(n):
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, weight_decay)
        if momentum != 0:
            old = lists[2][i]
            b = _real(old)
            if fresh and fresh[i]:  # torch's first buffer is a detached copy of the gradient
                b = cast(prim._stop_gradient(g), b.dtype)
            else:
                b = prim.add(prim.mul(b, momentum), prim.mul(g, 1 - dampening))
            new_b.append(_back(b, old))
            g = prim.add(g, prim.mul(b, momentum)) if nesterov else b
        new_p.append(_back(prim.add(x, prim.mul(g, -lr)), params[i]))
    return _out(n, new_p, *([new_b] if momentum != 0 else []))


@decomposes("_adam_step")
def _adam_step(*arrays, n, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
               decoupled):
    lists = _split(arrays, n, 6 if amsgrad else 5)
    params, grads, steps, avgs, sqs = lists[:5]
    new = [[], [], [], [], []]
    for i in range(n):
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, 0 if decoupled else weight_decay)
        step = _incr(steps[i])
        s64 = _f64(step)
        if weight_decay != 0 and decoupled:
            x = prim.mul(x, 1 - lr * weight_decay)
        m = _lerp(_real(avgs[i]), g, 1 - beta1)
        v = _addcmul(prim.mul(_real(sqs[i]), beta2), g, g, 1 - beta2)
        new[2].append(_back(m, avgs[i]))
        new[3].append(_back(v, sqs[i]))
        if amsgrad:
            mx = prim.maximum(_real(lists[5][i]), v)
            new[4].append(_back(mx, lists[5][i]))
            v = mx
        bias2 = prim.sqrt(prim.sub(1, prim.pow(beta2, s64)))
        denom = prim.add(prim.div(prim.sqrt(v), bias2), eps)
        value = prim.div(-lr, prim.sub(1, prim.pow(beta1, s64)))
        new[0].append(_back(_addcdiv(x, m, denom, value), params[i]))
        new[1].append(cast(step, steps[i].dtype))
    return _out(n, new[0], new[1], new[2], new[3], *([new[4]] if amsgrad else []))


@decomposes("_rmsprop_step")
def _rmsprop_step(*arrays, n, lr, alpha, eps, weight_decay, momentum, centered, maximize):
    k = 4 + (momentum > 0) + bool(centered)
    lists = _split(arrays, n, k)
    params, grads, steps, sqs = lists[:4]
    bufs = lists[4] if momentum > 0 else None
    gavgs = lists[k - 1] if centered else None
    new_p, new_s, new_sq, new_b, new_ga = [], [], [], [], []
    for i in range(n):
        new_s.append(cast(_incr(steps[i]), steps[i].dtype))
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, weight_decay)
        sq = _addcmul(prim.mul(_real(sqs[i]), alpha), g, g, 1 - alpha)
        new_sq.append(_back(sq, sqs[i]))
        if centered:
            ga = _lerp(_real(gavgs[i]), g, 1 - alpha)
            new_ga.append(_back(ga, gavgs[i]))
            avg = prim.sqrt(_addcmul(sq, ga, ga, -1))
        else:
            avg = prim.sqrt(sq)
        avg = prim.add(avg, eps)
        if momentum > 0:
            buf = _addcdiv(prim.mul(_real(bufs[i]), momentum), g, avg, 1)
            new_b.append(_back(buf, bufs[i]))
            x = prim.add(x, prim.mul(buf, -lr))
        else:
            x = _addcdiv(x, g, avg, -lr)
        new_p.append(_back(x, params[i]))
    extra = ([new_b] if momentum > 0 else []) + ([new_ga] if centered else [])
    return _out(n, new_p, new_s, new_sq, *extra)


@decomposes("_adagrad_step")
def _adagrad_step(*arrays, n, lr, lr_decay, eps, weight_decay, maximize):
    params, grads, steps, sums = _split(arrays, n, 4)
    new_p, new_s, new_sum = [], [], []
    for i in range(n):
        step = _incr(steps[i])
        new_s.append(cast(step, steps[i].dtype))
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, weight_decay)
        s = _addcmul(_real(sums[i]), g, g, 1)
        new_sum.append(_back(s, sums[i]))
        std = prim.add(prim.sqrt(s), eps)
        clr = prim.div(-lr, prim.add(prim.mul(prim.sub(_f64(step), 1), lr_decay), 1))
        new_p.append(_back(_addcdiv(x, g, std, clr), params[i]))
    return _out(n, new_p, new_s, new_sum)


@decomposes("_adadelta_step")
def _adadelta_step(*arrays, n, lr, rho, eps, weight_decay, maximize):
    params, grads, steps, sqs, accs = _split(arrays, n, 5)
    new_p, new_s, new_sq, new_acc = [], [], [], []
    for i in range(n):
        new_s.append(cast(_incr(steps[i]), steps[i].dtype))
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, weight_decay)
        sq = _addcmul(prim.mul(_real(sqs[i]), rho), g, g, 1 - rho)
        new_sq.append(_back(sq, sqs[i]))
        acc = _real(accs[i])
        delta = prim.mul(prim.div(prim.sqrt(prim.add(acc, eps)),
                                  prim.sqrt(prim.add(sq, eps))), g)
        new_acc.append(_back(_addcmul(prim.mul(acc, rho), delta, delta, 1 - rho), accs[i]))
        new_p.append(_back(prim.add(x, prim.mul(delta, -lr)), params[i]))
    return _out(n, new_p, new_s, new_sq, new_acc)


@decomposes("_adamax_step")
def _adamax_step(*arrays, n, lr, beta1, beta2, eps, weight_decay, maximize):
    params, grads, steps, avgs, infs = _split(arrays, n, 5)
    new_p, new_s, new_m, new_u = [], [], [], []
    for i in range(n):
        step = _incr(steps[i])
        new_s.append(cast(step, steps[i].dtype))
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, weight_decay)
        m = _lerp(_real(avgs[i]), g, 1 - beta1)
        u = prim.maximum(prim.mul(_real(infs[i]), beta2), prim.add(prim.abs(g), eps))
        new_m.append(_back(m, avgs[i]))
        new_u.append(_back(u, infs[i]))
        value = prim.div(-lr, prim.sub(1, prim.pow(beta1, _f64(step))))
        new_p.append(_back(_addcdiv(x, m, u, value), params[i]))
    return _out(n, new_p, new_s, new_m, new_u)


@decomposes("_nadam_step")
def _nadam_step(*arrays, n, lr, beta1, beta2, eps, weight_decay, maximize, decoupled,
                momentum_decay):
    params, grads, steps, mps, avgs, sqs = _split(arrays, n, 6)
    new = [[], [], [], [], []]
    for i in range(n):
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, 0 if decoupled else weight_decay)
        step = _incr(steps[i])
        s64 = _f64(step)
        bc2 = prim.sub(1, prim.pow(beta2, s64))
        if weight_decay != 0 and decoupled:
            x = prim.mul(x, 1 - lr * weight_decay)
        mu = prim.mul(prim.sub(1.0, prim.mul(prim.pow(0.96, prim.mul(s64, momentum_decay)),
                                             0.5)), beta1)
        mu_next = prim.mul(prim.sub(1.0, prim.mul(
            prim.pow(0.96, prim.mul(prim.add(s64, 1), momentum_decay)), 0.5)), beta1)
        # mu_product keeps its own dtype: the product rounds there, as the kernel's does
        mp = prim.mul(mps[i], cast(mu, mps[i].dtype))
        mp64 = _f64(mp)
        m = _lerp(_real(avgs[i]), g, 1 - beta1)
        v = _addcmul(prim.mul(_real(sqs[i]), beta2), g, g, 1 - beta2)
        denom = prim.add(prim.sqrt(prim.div(v, bc2)), eps)
        x = _addcdiv(x, g, denom, prim.div(prim.mul(prim.sub(1.0, mu), -lr),
                                           prim.sub(1.0, mp64)))
        x = _addcdiv(x, m, denom, prim.div(prim.mul(mu_next, -lr),
                                           prim.sub(1.0, prim.mul(mp64, mu_next))))
        new[0].append(_back(x, params[i]))
        new[1].append(cast(step, steps[i].dtype))
        new[2].append(mp)
        new[3].append(_back(m, avgs[i]))
        new[4].append(_back(v, sqs[i]))
    return _out(n, *new)


@decomposes("_radam_step")
def _radam_step(*arrays, n, lr, beta1, beta2, eps, weight_decay, maximize, decoupled):
    params, grads, steps, avgs, sqs = _split(arrays, n, 5)
    rho_inf = 2 / (1 - beta2) - 1
    new = [[], [], [], []]
    for i in range(n):
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, 0 if decoupled else weight_decay)
        step = _incr(steps[i])
        s64 = _f64(step)
        if weight_decay != 0 and decoupled:
            x = prim.mul(x, 1 - lr * weight_decay)
        m = _lerp(_real(avgs[i]), g, 1 - beta1)
        v = _addcmul(prim.mul(_real(sqs[i]), beta2), g, g, 1 - beta2)
        bc1 = prim.sub(1, prim.pow(beta1, s64))
        bc2 = prim.sub(1, prim.pow(beta2, s64))
        upd = prim.mul(prim.div(m, bc1), lr)
        rho_t = prim.sub(rho_inf, prim.div(prim.mul(prim.mul(s64, 2), prim.pow(beta2, s64)),
                                           bc2))
        # the rectified branch is chosen by value (where), not by Python: the step counter is
        # data in a graph; its radicand is clamped so the unchosen branch stays finite
        rad = prim.div(prim.mul(prim.mul(prim.sub(rho_t, 4), prim.sub(rho_t, 2)), rho_inf),
                       prim.mul(rho_t, (rho_inf - 4) * (rho_inf - 2)))
        rect = prim.sqrt(prim.maximum(rad, 0.0))
        ad = prim.mul(prim.div(1, prim.add(prim.sqrt(v), eps)), prim.sqrt(bc2))
        upd = prim.where(prim.gt(rho_t, 5.0), prim.mul(prim.mul(upd, ad), rect), upd)
        new[0].append(_back(prim.sub(x, upd), params[i]))
        new[1].append(cast(step, steps[i].dtype))
        new[2].append(_back(m, avgs[i]))
        new[3].append(_back(v, sqs[i]))
    return _out(n, *new)


@decomposes("_asgd_step")
def _asgd_step(*arrays, n, lr, lambd, alpha, t0, weight_decay, maximize):
    params, grads, steps, etas, mus, axs = _split(arrays, n, 6)
    new = [[], [], [], [], []]
    for i in range(n):
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, weight_decay)
        step = _incr(steps[i])
        s64 = _f64(step)
        # torch reads eta as a Python number (``eta.item()``): no derivative flows through it
        eta = prim._stop_gradient(_f64(etas[i]))
        x = prim.mul(x, prim.sub(1, prim.mul(eta, lambd)))
        x = prim.add(x, prim.mul(g, prim.neg(eta)))
        ax = _real(axs[i])
        mu = _f64(mus[i])
        # averaging starts at t0: until then mu is exactly 1 and ax copies the param
        ax = prim.where(prim.eq(mu, 1), x, prim.add(ax, prim.mul(prim.sub(x, ax), mu)))
        new[0].append(_back(x, params[i]))
        new[1].append(cast(step, steps[i].dtype))
        new[2].append(cast(prim.div(lr, prim.pow(prim.add(prim.mul(s64, lambd * lr), 1),
                                                 alpha)), etas[i].dtype))
        new[3].append(cast(prim.div(1, prim.maximum(prim.sub(s64, t0), 1)), mus[i].dtype))
        new[4].append(_back(ax, axs[i]))
    return _out(n, *new)


@decomposes("_rprop_step")
def _rprop_step(*arrays, n, etaminus, etaplus, step_size_min, step_size_max, maximize):
    params, grads, steps, prevs, sizes = _split(arrays, n, 5)
    new = [[], [], [], []]
    for i in range(n):
        new[1].append(cast(_incr(steps[i]), steps[i].dtype))
        x = _real(params[i])
        g = _grad(x, grads[i], maximize, 0)
        prod = prim.mul(g, _real(prevs[i]))
        flipped = prim.lt(prod, 0)
        factor = prim.where(prim.gt(prod, 0), etaplus, prim.where(flipped, etaminus, 1.0))
        size = prim.mul(_real(sizes[i]), factor)
        size = prim.minimum(prim.maximum(size, step_size_min), step_size_max)
        g = prim.where(flipped, 0.0, g)  # no step where the sign flipped
        new[0].append(_back(prim.sub(x, prim.mul(prim.sign(g), size)), params[i]))
        new[2].append(_back(g, prevs[i]))
        new[3].append(_back(size, sizes[i]))
    return _out(n, *new)


def _mean(t, dim):
    return prim.div(prim.sum(t, dims=(dim,), keepdim=True), t.shape[dim])


def _norm64(t):
    # the kernel's norm: squares summed in the tensor's dtype, then a float
    return _f64(prim.sqrt(prim.sum(prim.mul(t, t), dims=tuple(range(t.dim())), keepdim=False)))


def _lerp_by(a, b, w):
    """``_lerp`` with a tensor weight: its branch chosen by value."""
    d = prim.sub(b, a)
    return prim.where(prim.lt(prim.abs(w), 0.5), prim.add(a, prim.mul(d, w)),
                      prim.sub(b, prim.mul(d, prim.sub(1, w))))


@decomposes("_adafactor_step")
def _adafactor_step(*arrays, n, lr, eps1, eps2, d, weight_decay, beta2_decay, maximize,
                    factored):
    params, grads, steps, firsts, seconds = _split(arrays, n, 5)
    new_p, new_s, new_1, new_2 = [], [], [], []
    for i in range(n):
        x = params[i]
        g = _grad(x, grads[i], maximize, 0)
        step = _incr(steps[i])
        s64 = _f64(step)
        w = prim.pow(s64, beta2_decay)
        rho = prim.minimum(prim.div(1, prim.sqrt(s64)), lr)
        size = max(x.numel(), 1)
        alpha = prim.mul(prim.maximum(prim.div(_norm64(x), size ** 0.5), eps2), rho)
        if weight_decay != 0:
            x = prim.mul(x, 1 - lr * weight_decay)
        sq = prim.mul(g, g)
        if factored[i]:
            row = _lerp_by(firsts[i], cast(_mean(sq, -1), x.dtype), cast(w, x.dtype))
            col = _lerp_by(seconds[i], cast(_mean(sq, -2), x.dtype), cast(w, x.dtype))
            new_1.append(row)
            new_2.append(col)
            est = prim.div(prim.matmul(row, col), prim.maximum(_mean(row, -2), eps1))
        else:
            est = _lerp_by(firsts[i], sq, cast(w, x.dtype))
            new_1.append(est)
            new_2.append(None)
        est = prim.maximum(est, eps1 * eps1)
        upd = prim.mul(prim.div(1, prim.sqrt(est)), g)
        denom = prim.maximum(prim.div(_norm64(upd), size ** 0.5 * d), 1.0)
        new_p.append(cast(prim.add(x, prim.mul(upd, prim.div(prim.neg(alpha), denom))),
                          params[i].dtype))
        new_s.append(cast(step, steps[i].dtype))
    return _out(n, new_p, new_s, new_1, new_2)


def _bf(t):
    return cast(cast(t, _dt.bfloat16), _dt.float32)


def _newton_schulz(g, ns_coefficients, ns_steps, eps):
    a, b, c = ns_coefficients
    x = _bf(g)
    tall = g.shape[0] > g.shape[1]
    if tall:
        x = prim.permute(x, dims=(1, 0))
    norm = _bf(prim.sqrt(prim.sum(prim.mul(x, x), dims=(0, 1), keepdim=False)))
    x = _bf(prim.div(x, prim.maximum(norm, eps)))
    for _ in range(ns_steps):
        gram = _bf(prim.matmul(x, prim.permute(x, dims=(1, 0))))
        upd = _bf(prim.add(prim.mul(gram, b), prim.mul(prim.matmul(gram, gram), c)))
        x = _bf(prim.add(prim.mul(x, a), prim.matmul(upd, x)))
    return prim.permute(x, dims=(1, 0)) if tall else x


@decomposes("_muon_step")
def _muon_step(*arrays, n, lr, weight_decay, momentum, nesterov, ns_coefficients, eps,
               ns_steps, adjust_lr_fn):
    from ..optim import muon_lr
    params, grads, bufs = _split(arrays, n, 3)
    new_p, new_b = [], []
    for i in range(n):
        x, g = params[i], grads[i]
        buf = _lerp(bufs[i], g, 1 - momentum)
        new_b.append(buf)
        upd = _lerp(g, buf, momentum) if nesterov else buf
        o = _newton_schulz(upd, ns_coefficients, ns_steps, eps)
        x = prim.mul(x, 1 - lr * weight_decay)
        step = -muon_lr(lr, adjust_lr_fn, tuple(x.shape))
        new_p.append(prim.add(x, cast(prim.mul(o, step), x.dtype)))
    return _out(n, new_p, new_b)


@decomposes("_sparse_adam_step")
def _sparse_adam_step(*arrays, n, lr, beta1, beta2, eps, maximize, steps):
    params, grads, masks, avgs, sqs = _split(arrays, n, 5)
    new_p, new_m, new_v = [], [], []
    for i in range(n):
        g, mask = grads[i], masks[i]
        if maximize:
            g = prim.neg(g)
        m, v = avgs[i], sqs[i]
        # only the masked entries move: where(mask, new, old)
        m1 = prim.add(m, prim.mul(prim.sub(g, m), 1 - beta1))
        v1 = prim.add(v, prim.mul(prim.sub(prim.mul(g, g), v), 1 - beta2))
        step = steps[i]
        step_size = lr * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step) if step else 0.0
        upd = prim.mul(prim.div(m1, prim.add(prim.sqrt(v1), eps)), -step_size)
        new_m.append(prim.where(mask, m1, m))
        new_v.append(prim.where(mask, v1, v))
        new_p.append(prim.where(mask, prim.add(params[i], upd), params[i]))
    return tuple(new_p) + (None,) * (2 * n) + tuple(new_m) + tuple(new_v)


@decomposes("_lbfgs_gather")
def _lbfgs_gather(*grads):
    """Each gradient's real view flattened, cast to the common dtype, concatenated."""
    flat = []
    for g in grads:
        x = _real(g)
        flat.append(reshape(x, (numel(x.shape),)))
    dt = flat[0].dtype
    for x in flat[1:]:
        dt = _dt.promote_types(dt, x.dtype)
    flat = [cast(x, dt) for x in flat]
    return prim.cat(*flat, dim=0, sizes=tuple(x.shape[0] for x in flat))


@decomposes("_lbfgs_direction")
def _lbfgs_direction(g, h_diag, *pairs, h):
    """The two-loop recursion; the coefficients stay 0-dim tensors (the kernel's alphas)."""
    ys, ss, ro = pairs[:h], pairs[h:2 * h], pairs[2 * h:]
    q = prim.neg(g)
    al = [None] * h
    for i in range(h - 1, -1, -1):
        al[i] = prim.mul(prim.matmul(ss[i], q), ro[i])
        q = prim.add(q, prim.mul(ys[i], prim.neg(al[i])))
    r = prim.mul(q, h_diag)
    for i in range(h):
        be = prim.mul(prim.matmul(ys[i], r), ro[i])
        r = prim.add(r, prim.mul(ss[i], prim.sub(al[i], be)))
    return (r, *al)


@decomposes("_lbfgs_step")
def _lbfgs_step(*arrays, n, alpha):
    """New params: each plus ``alpha`` times its slice of the direction (read only)."""
    d, new, off = arrays[n], [], 0
    for p in arrays[:n]:
        x = _real(p)
        k = numel(x.shape)
        piece = reshape(slice_dim(d, 0, off, off + k), x.shape)
        if p.dtype in (_dt.float16, _dt.bfloat16):
            x = _back(prim.add(cast(x, _dt.float32), prim.mul(cast(piece, _dt.float32), alpha)),
                      p)
        else:
            x = _back(prim.add(x, prim.mul(piece, alpha)), p)
        new.append(x)
        off += k
    return tuple(new) + (None,)


FUNCTIONALIZED.update({"_lbfgs_step", "_sgd_step", "_adam_step", "_rmsprop_step", "_adagrad_step",
                       "_adadelta_step", "_adamax_step", "_nadam_step", "_radam_step",
                       "_asgd_step", "_rprop_step", "_adafactor_step", "_muon_step",
                       "_sparse_adam_step"})
