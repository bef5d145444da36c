"""Fused optimizer updates: one operator per algorithm step, applied to all the parameters
of a group at once (foreach style: one dispatch per group, not per parameter).

Each update is an `Op` whose tensor inputs are lists laid out one after the other (the
params, their gradients, then each state buffer, ``n`` tensors per list; ``lists`` in the
params names them) and whose kernel writes the new values into the params and state
buffers in place, returning nothing: a dispatch mode sees the whole step with its
hyper-parameters (a tracer, a device backend, a ZeRO sharding mode), and the caller bumps
the version counter of every tensor written, as torch's ``p.add_`` would, so autograd's
saved-tensor checks see the change.  Gradients are only read (a new array is made where
torch's ``-grad`` or ``grad.add(param, alpha=wd)`` makes one).

Complex tensors are updated through a real view (torch's ``view_as_real``).  The arithmetic
follows torch's kernels operation by operation (lerp, addcmul, addcdiv with a scalar
``value``), so trajectories match torch's to rounding.  The optimizers themselves (param
groups, state, hooks) live in ``ember.optim``, above this layer.
"""
import numpy as np

from .._core.ckernels import optim as _c_optim
from .._core.device import namespace_of
from .._core.op import Op
from .._core.state import STATE
from .._core.tensor import Tensor, _version_of
from ._helpers import apply

__all__ = ["real", "lerp_", "addcmul_", "addcdiv_", "grad_array", "fused_step", "SGD_STEP",
           "ADAM_STEP", "RMSPROP_STEP", "ADAGRAD_STEP", "ADADELTA_STEP", "ADAMAX_STEP",
           "NADAM_STEP", "RADAM_STEP", "ASGD_STEP", "RPROP_STEP", "ADAFACTOR_STEP",
           "SPARSE_ADAM_STEP", "MUON_STEP", "recorded_step", "newton_schulz", "muon_lr"]


# ---- array building blocks (also used by the optimizers not fused yet) ---------------------

def real(a):
    """A real view of ``a``; 0-dim arrays become 1-element views so that ufuncs keep
    returning arrays (``out=`` needs them)."""
    if a.ndim == 0:
        a = a.reshape(1)
    if a.dtype.kind != "c":
        return a
    return a.view(a.real.dtype)


def grad_array(x, g, maximize, weight_decay):
    """The real view of gradient ``g`` of real-viewed param ``x``, negated for ``maximize``
    and L2-decayed; ``g`` is never written in place."""
    xp = namespace_of(x)
    if g.dtype.kind == "c" and not g.flags.c_contiguous:
        g = xp.ascontiguousarray(g)
    g = real(g)
    if maximize:
        g = xp.negative(g)
    if weight_decay != 0:
        t = xp.multiply(x, weight_decay)
        t += g
        g = t
    return g


def lerp_(a, b, w):
    """``a.lerp_(b, w)`` with torch's two-branch formula."""
    xp = namespace_of(a)
    t = xp.subtract(b, a)
    if abs(w) < 0.5:
        t *= w
        a += t
    else:
        t *= 1 - w
        xp.subtract(b, t, out=a)


def addcmul_(a, b, c, value):
    """``a += value * b * c``."""
    xp = namespace_of(a)
    t = xp.multiply(b, value)
    t *= c
    a += t


def addcdiv_(a, b, c, value, scratch=None):
    """``a += value * (b / c)``; ``scratch`` (may be ``c``) receives the quotient."""
    xp = namespace_of(b)
    t = xp.divide(b, c, out=scratch)
    t *= value
    a += t


def _incr(step):
    """``step += 1`` on a 0-dim step array; the new step as a Python float."""
    step += 1
    return float(step)


# ---- the fused steps -----------------------------------------------------------------------

def _split(arrays, n, k):
    return [arrays[i * n:(i + 1) * n] for i in range(k)]


def _sgd_kernel(xp, *arrays, n, lr, momentum, dampening, weight_decay, nesterov, maximize,
                fresh=()):
    """params, grads[, momentum buffers]; ``fresh[i]``: buffer i starts from the gradient."""
    lists = _split(arrays, n, 3 if momentum != 0 else 2)
    if _c_optim.sgd_step(lists[0], lists[1], lists[2] if momentum != 0 else None, fresh, lr,
                         momentum, dampening, weight_decay, nesterov, maximize):
        return ()
    for i in range(n):
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, weight_decay)
        if momentum != 0:
            b = real(lists[2][i])
            if fresh and fresh[i]:
                b[...] = g
            else:
                b *= momentum
                b += g * (1 - dampening)
            g = g + b * momentum if nesterov else b
        x += xp.multiply(g, -lr)
    return ()


def _adam_kernel(xp, *arrays, n, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize,
                 decoupled):
    """params, grads, steps, exp_avgs, exp_avg_sqs[, max_exp_avg_sqs]."""
    lists = _split(arrays, n, 6 if amsgrad else 5)
    if _c_optim.adam_step(lists[0], lists[1], lists[2], lists[3], lists[4],
                          lists[5] if amsgrad else None, lr, beta1, beta2, eps, weight_decay,
                          decoupled, maximize):
        return ()
    for i in range(n):
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, 0 if decoupled else weight_decay)
        step = _incr(lists[2][i])
        if weight_decay != 0 and decoupled:
            x *= 1 - lr * weight_decay
        m, v = real(lists[3][i]), real(lists[4][i])
        lerp_(m, g, 1 - beta1)
        v *= beta2
        addcmul_(v, g, g, 1 - beta2)
        if amsgrad:
            mx = real(lists[5][i])
            xp.maximum(mx, v, out=mx)
            v = mx
        denom = xp.sqrt(v)
        denom /= (1 - beta2 ** step) ** 0.5
        denom += eps
        addcdiv_(x, m, denom, -lr / (1 - beta1 ** step), scratch=denom)
    return ()


def _rmsprop_kernel(xp, *arrays, n, lr, alpha, eps, weight_decay, momentum, centered,
                    maximize):
    """params, grads, steps, square_avgs[, momentum buffers][, grad_avgs]."""
    k = 4 + (momentum > 0) + bool(centered)
    lists = _split(arrays, n, k)
    buf_at = 4 if momentum > 0 else None
    avg_at = k - 1 if centered else None
    for i in range(n):
        _incr(lists[2][i])
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, weight_decay)
        sq = real(lists[3][i])
        sq *= alpha
        addcmul_(sq, g, g, 1 - alpha)
        if centered:
            ga = real(lists[avg_at][i])
            lerp_(ga, g, 1 - alpha)
            avg = sq.copy()
            addcmul_(avg, ga, ga, -1)
            xp.sqrt(avg, out=avg)
        else:
            avg = xp.sqrt(sq)
        avg += eps
        if momentum > 0:
            buf = real(lists[buf_at][i])
            buf *= momentum
            addcdiv_(buf, g, avg, 1)
            x += xp.multiply(buf, -lr)
        else:
            addcdiv_(x, g, avg, -lr, scratch=avg)
    return ()


def _adagrad_kernel(xp, *arrays, n, lr, lr_decay, eps, weight_decay, maximize):
    """params, grads, steps, sums."""
    lists = _split(arrays, n, 4)
    for i in range(n):
        step = _incr(lists[2][i])
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, weight_decay)
        s = real(lists[3][i])
        addcmul_(s, g, g, 1)
        std = xp.sqrt(s)
        std += eps
        addcdiv_(x, g, std, -lr / (1 + (step - 1) * lr_decay), scratch=std)
    return ()


def _adadelta_kernel(xp, *arrays, n, lr, rho, eps, weight_decay, maximize):
    """params, grads, steps, square_avgs, acc_deltas."""
    lists = _split(arrays, n, 5)
    for i in range(n):
        _incr(lists[2][i])
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, weight_decay)
        sq, acc = real(lists[3][i]), real(lists[4][i])
        sq *= rho
        addcmul_(sq, g, g, 1 - rho)
        std = xp.add(sq, eps)
        xp.sqrt(std, out=std)
        delta = xp.add(acc, eps)
        xp.sqrt(delta, out=delta)
        delta /= std
        delta *= g
        acc *= rho
        addcmul_(acc, delta, delta, 1 - rho)
        delta *= -lr
        x += delta
    return ()


def _adamax_kernel(xp, *arrays, n, lr, beta1, beta2, eps, weight_decay, maximize):
    """params, grads, steps, exp_avgs, exp_infs."""
    lists = _split(arrays, n, 5)
    for i in range(n):
        step = _incr(lists[2][i])
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, weight_decay)
        m, u = real(lists[3][i]), real(lists[4][i])
        lerp_(m, g, 1 - beta1)
        u *= beta2
        a = xp.abs(g)
        a += eps
        xp.maximum(u, a, out=u)
        addcdiv_(x, m, u, -lr / (1 - beta1 ** step), scratch=a)
    return ()


def _nadam_kernel(xp, *arrays, n, lr, beta1, beta2, eps, weight_decay, maximize, decoupled,
                  momentum_decay):
    """params, grads, steps, mu_products, exp_avgs, exp_avg_sqs."""
    lists = _split(arrays, n, 6)
    md = momentum_decay
    for i in range(n):
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, 0 if decoupled else weight_decay)
        step = _incr(lists[2][i])
        bc2 = 1 - beta2 ** step
        if weight_decay != 0 and decoupled:
            x *= 1 - lr * weight_decay
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
        # mu_product is a scalar-dtype tensor in torch: the product rounds in that dtype
        mp = lists[3][i]
        mp *= mu
        mp = float(mp)
        m, v = real(lists[4][i]), real(lists[5][i])
        lerp_(m, g, 1 - beta1)
        v *= beta2
        addcmul_(v, g, g, 1 - beta2)
        denom = xp.divide(v, bc2)
        xp.sqrt(denom, out=denom)
        denom += eps
        addcdiv_(x, g, denom, -lr * (1.0 - mu) / (1.0 - mp))
        addcdiv_(x, m, denom, -lr * mu_next / (1.0 - mp * mu_next))
    return ()


def _radam_kernel(xp, *arrays, n, lr, beta1, beta2, eps, weight_decay, maximize, decoupled):
    """params, grads, steps, exp_avgs, exp_avg_sqs."""
    lists = _split(arrays, n, 5)
    rho_inf = 2 / (1 - beta2) - 1
    for i in range(n):
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, 0 if decoupled else weight_decay)
        step = _incr(lists[2][i])
        if weight_decay != 0 and decoupled:
            x *= 1 - lr * weight_decay
        m, v = real(lists[3][i]), real(lists[4][i])
        lerp_(m, g, 1 - beta1)
        v *= beta2
        addcmul_(v, g, g, 1 - beta2)
        bc1 = 1 - beta1 ** step
        bc2 = 1 - beta2 ** step
        upd = xp.divide(m, bc1)
        upd *= lr
        rho_t = rho_inf - 2 * step * beta2 ** step / bc2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf /
                    ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            # torch's ``scalar / tensor`` is ``tensor.reciprocal() * scalar``
            ad = xp.sqrt(v)
            ad += eps
            xp.reciprocal(ad, out=ad)
            ad *= bc2 ** 0.5
            upd *= ad
            upd *= rect
        x -= upd
    return ()


def _asgd_kernel(xp, *arrays, n, lr, lambd, alpha, t0, weight_decay, maximize):
    """params, grads, steps, etas, mus, axs."""
    lists = _split(arrays, n, 6)
    for i in range(n):
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, weight_decay)
        step = _incr(lists[2][i])
        eta_a, mu_a = lists[3][i], lists[4][i]
        eta = float(eta_a)
        x *= 1 - lambd * eta
        x += xp.multiply(g, -eta)
        ax = real(lists[5][i])
        mu = float(mu_a)
        if mu != 1:
            d = xp.subtract(x, ax)
            d *= mu
            ax += d
        else:
            ax[...] = x
        eta_a[...] = lr / ((1 + lambd * lr * step) ** alpha)
        mu_a[...] = 1 / max(1, step - t0)
    return ()


def _rprop_kernel(xp, *arrays, n, etaminus, etaplus, step_size_min, step_size_max, maximize):
    """params, grads, steps, prevs, step_sizes."""
    lists = _split(arrays, n, 5)
    for i in range(n):
        _incr(lists[2][i])
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, 0)
        prev, size = real(lists[3][i]), real(lists[4][i])
        prod = xp.multiply(g, prev)
        flipped = prod < 0
        factor = xp.ones_like(size)
        factor[prod > 0] = etaplus
        factor[flipped] = etaminus
        size *= factor
        xp.clip(size, step_size_min, step_size_max, out=size)
        g = g.copy()
        g[flipped] = 0  # no step where the sign flipped; the next step starts afresh
        t = xp.sign(g)
        t *= size
        x -= t
        prev[...] = g
    return ()


def _norm(a):
    xp = namespace_of(a)
    return float(xp.sqrt(xp.sum(xp.square(a, dtype=a.dtype), dtype=a.dtype)))


def _adafactor_kernel(xp, *arrays, n, lr, eps1, eps2, d, weight_decay, beta2_decay, maximize,
                      factored):
    """params, grads, steps, then two state lists: row_vars and col_vars where
    ``factored[i]`` (a matrix: its second moment kept as a row and a column average),
    else variances and the same variances again (the second entry is not read)."""
    lists = _split(arrays, n, 5)
    for i in range(n):
        x = real(lists[0][i])
        g = grad_array(x, lists[1][i], maximize, 0)
        step = _incr(lists[2][i])
        w = step ** beta2_decay
        rho = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, _norm(x) / x.size ** 0.5) * rho
        if weight_decay != 0:
            x *= 1 - lr * weight_decay
        if factored[i]:
            row, col = real(lists[3][i]), real(lists[4][i])
            lerp_(row, xp.mean(xp.square(g), axis=-1, keepdims=True), w)
            lerp_(col, xp.mean(xp.square(g), axis=-2, keepdims=True), w)
            est = xp.matmul(row, col)
            est /= xp.maximum(xp.mean(row, axis=-2, keepdims=True), eps1)
        else:
            var = real(lists[3][i])
            lerp_(var, xp.square(g), w)
            est = var.copy()
        xp.maximum(est, eps1 * eps1, out=est)
        upd = xp.sqrt(est)
        xp.divide(1, upd, out=upd)
        upd *= g
        denom = max(1.0, _norm(upd) / (upd.size ** 0.5 * d))
        upd *= -alpha / denom
        x += upd
    return ()


def _bf16(a):
    """Rounded to bfloat16, kept in float32 (torch runs Muon's iteration in bfloat16)."""
    import ml_dtypes
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)


def newton_schulz(grad, ns_coefficients, ns_steps, eps):
    """Approximate ``U V^T`` of ``grad = U S V^T`` (a quintic Newton-Schulz iteration, every
    matrix product rounded to bfloat16); float32 result."""
    a, b, c = ns_coefficients
    x = _bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = _bf16(x / max(float(_bf16(np.sqrt(np.sum(x * x)))), eps))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        upd = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + upd @ x)
    return x.T if tall else x


def muon_lr(lr, adjust_lr_fn, shape):
    """The step size scaled for the matrix's aspect ratio."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = max(1, rows / cols) ** 0.5
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * max(rows, cols) ** 0.5
    else:
        ratio = 1.0
    return lr * ratio


def _muon_kernel(xp, *arrays, n, lr, weight_decay, momentum, nesterov, ns_coefficients, eps,
                 ns_steps, adjust_lr_fn):
    """params, grads, momentum_buffers (2-D, real)."""
    lists = _split(arrays, n, 3)
    for i in range(n):
        x, g, buf = lists[0][i], lists[1][i], lists[2][i]
        lerp_(buf, g, 1 - momentum)
        if nesterov:
            upd = g.copy()
            lerp_(upd, buf, momentum)
        else:
            upd = buf
        o = newton_schulz(upd, ns_coefficients, ns_steps, eps)
        x *= 1 - lr * weight_decay
        x += (o * -muon_lr(lr, adjust_lr_fn, x.shape)).astype(x.dtype)
    return ()


def _sparse_adam_kernel(xp, *arrays, n, lr, beta1, beta2, eps, maximize, steps):
    """params, dense grads, masks (the entries to update: a sparse gradient's stored ones),
    exp_avgs, exp_avg_sqs; ``steps[i]``: parameter i's step count (a Python int, as
    torch's SparseAdam keeps it)."""
    lists = _split(arrays, n, 5)
    for i in range(n):
        x, g, mask = real(lists[0][i]), real(lists[1][i]), lists[2][i]
        if maximize:
            g = xp.negative(g)
        if not mask.any():
            continue
        if mask.ndim == 0:
            mask = mask.reshape(1)
        gv = g[mask]
        m, v = real(lists[3][i]), real(lists[4][i])
        old_m, old_v = m[mask], v[mask]
        dm = xp.subtract(gv, old_m)
        dm *= 1 - beta1
        dv = xp.square(gv)
        dv -= old_v
        dv *= 1 - beta2
        m[mask] += dm
        v[mask] += dv
        numer = dm + old_m
        denom = xp.sqrt(dv + old_v)
        denom += eps
        step = steps[i]
        step_size = lr * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
        numer /= denom
        x[mask] += numer * -step_size
    return ()


def _no_outputs(*inputs, **params):
    return ()


_UPDATE = {"vjp": "an optimizer update: it writes its inputs in place and is not "
                  "differentiable",
           "batch": "an optimizer update writes whole parameters in place; vmap over "
                    "optimizer steps is not supported"}


def _step_op(name, kernel, lists):
    doc = (f"In-place {name[1:-5]} update of a parameter group; tensor inputs: "
           f"{', '.join(lists)} ({'n'} each).  Writes params and state, reads grads.")
    return Op(name, kernel, None, differentiable=False, save_inputs=False, n_out=None,
              shape=_no_outputs, unsupported=_UPDATE, doc=doc)


SGD_STEP = _step_op("_sgd_step", _sgd_kernel, ("params", "grads", "momentum_buffers"))
ADAM_STEP = _step_op("_adam_step", _adam_kernel, ("params", "grads", "steps", "exp_avgs",
                                                  "exp_avg_sqs", "max_exp_avg_sqs"))
RMSPROP_STEP = _step_op("_rmsprop_step", _rmsprop_kernel, ("params", "grads", "steps",
                                                           "square_avgs", "momentum_buffers",
                                                           "grad_avgs"))
ADAGRAD_STEP = _step_op("_adagrad_step", _adagrad_kernel, ("params", "grads", "steps",
                                                           "sums"))
ADADELTA_STEP = _step_op("_adadelta_step", _adadelta_kernel,
                         ("params", "grads", "steps", "square_avgs", "acc_deltas"))
ADAMAX_STEP = _step_op("_adamax_step", _adamax_kernel,
                       ("params", "grads", "steps", "exp_avgs", "exp_infs"))
NADAM_STEP = _step_op("_nadam_step", _nadam_kernel,
                      ("params", "grads", "steps", "mu_products", "exp_avgs", "exp_avg_sqs"))
RADAM_STEP = _step_op("_radam_step", _radam_kernel,
                      ("params", "grads", "steps", "exp_avgs", "exp_avg_sqs"))
ASGD_STEP = _step_op("_asgd_step", _asgd_kernel,
                     ("params", "grads", "steps", "etas", "mus", "axs"))
RPROP_STEP = _step_op("_rprop_step", _rprop_kernel,
                      ("params", "grads", "steps", "prevs", "step_sizes"))
SPARSE_ADAM_STEP = _step_op("_sparse_adam_step", _sparse_adam_kernel,
                            ("params", "grads", "masks", "exp_avgs", "exp_avg_sqs"))
MUON_STEP = _step_op("_muon_step", _muon_kernel, ("params", "grads", "momentum_buffers"))
ADAFACTOR_STEP = _step_op("_adafactor_step", _adafactor_kernel,
                          ("params", "grads", "steps", "row_vars or variances",
                           "col_vars or variances"))


def fused_step(op, params, grads, state_lists, differentiable=False, **hyper):
    """Run update ``op`` on the group: ``params`` and their ``grads`` (tensors), then each
    list of state tensors (``state_lists``, in the op's order); bump the versions of the
    tensors written.  ``differentiable``: run `recorded_step` instead."""
    n = len(params)
    if not n:
        return
    flat = params + grads
    for lst in state_lists:
        flat += lst
    hyper["n"] = n
    if differentiable:
        recorded_step(op, flat, hyper)
        return
    for k, v in hyper.items():
        if isinstance(v, Tensor):  # torch takes any hyper-parameter as a 0-dim tensor
            hyper[k] = v.item()
    apply(op, tuple(flat), hyper)
    for t in params:
        v = t._vc
        if v is None:
            v = _version_of(t)
        v[0] += 1
    for t in flat[2 * n:]:  # the state (gradients are only read)
        v = t._vc
        if v is None:
            v = _version_of(t)
        v[0] += 1


def recorded_step(op, flat, hyper):
    """The update of ``op`` as autograd records it (torch's ``differentiable=True``): the
    op's decomposition (`ember.ops.decompositions.optim`, the one statement of its math,
    in differentiable ops) runs with grad mode on, on clones of the tensors it writes, and
    each new value is copied into its tensor in place, as torch's ``param.add_(...)``
    writes it: a leaf that requires grad raises torch's in-place error, a non-leaf param
    or state tensor takes the new history.  The clones keep the values the backward pass
    needs from being overwritten by those copies.  Hyper-parameters may be tensors (a
    learning rate that requires grad)."""
    from .decompositions import decomposition_of
    n = hyper["n"]
    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        inputs = [t if n <= i < 2 * n else t.clone() for i, t in enumerate(flat)]
        new = decomposition_of(op)(*inputs, **hyper)
        for t, v in zip(flat, new):
            if v is not None:
                t.copy_(v)
    finally:
        STATE.grad_enabled = prev
