"""L-BFGS's vector work as three fused operators: the flat gradient (``_lbfgs_gather``),
the search direction (``_lbfgs_direction``) and the parameter step along it
(``_lbfgs_step``).

``_lbfgs_gather`` concatenates the gradients, each flattened (a complex one as its real
pairs, torch's view_as_real), into one vector of their promoted real dtype: torch's
``cat([g.view(-1) ...])`` in one dispatch instead of one view per parameter.

The two-loop recursion turns the flat gradient ``g`` and the ``h`` stored curvature pairs
(``y_i``, ``s_i``, ``ro_i = 1 / y_i.s_i``) into the quasi-Newton direction ``-H g``.
Written in ember operators it is ~8 dispatches per pair, sequential, on small vectors; this
operator is the whole recursion in one dispatch, foreach style like the fused optimizer
updates of `ember.ops.optim`, so a dispatch mode still sees the step as one call.

Inputs: ``g``, ``h_diag`` (0-dim, the initial Hessian scale), then the ``h`` y's, the ``h``
s's and the ``h`` ro's (0-dim).  Outputs: the direction, then the ``h`` first-loop
coefficients ``al_i`` (0-dim; torch keeps them in the optimizer state).  The arithmetic is
torch's operation by operation, in the dtype of ``g``: ``al_i = s_i.q * ro_i`` and
``q -= al_i y_i`` newest pair first, ``r = q * h_diag``, then oldest first
``be_i = y_i.r * ro_i`` and ``r += (al_i - be_i) s_i`` (a 0-dim coefficient enters as
the scalar ``alpha`` of ``add_``).

``_lbfgs_step`` adds ``alpha`` times the flat direction to the parameters, each its slice
(a complex parameter through its real view), in place and returning nothing, as the fused
updates of `ember.ops.optim` do; it is torch's ``p.add_(d[slice].view_as(p), alpha=t)``
per parameter in one dispatch.  Both decompositions are in `ember.ops.decompositions.optim`.
The line search and the optimizer's state live in `ember.optim.LBFGS`.
"""
import numpy as np

from .._core import dtype as _dt
from .._core.op import Op
from .._core.tensor import _version_of
from ._helpers import apply
from .optim import _UPDATE, _no_outputs, real

__all__ = ["LBFGS_GATHER", "LBFGS_DIRECTION", "LBFGS_STEP", "lbfgs_gather",
           "lbfgs_direction", "lbfgs_step"]

_HALVES = _dt.NP_HALVES


def _lbfgs_gather_kernel(xp, *grads):
    flat = []
    for g in grads:
        if g.dtype.kind == "c":
            g = real(xp.ascontiguousarray(g))
        flat.append(g.reshape(-1))
    return xp.concatenate(flat)


def _lbfgs_gather_shape(*grads):
    n, dt = 0, None
    for g in grads:
        k = 2 if g.dtype.is_complex else 1
        for s in g.shape:
            k = k * s
        n = n + k
        r = g.dtype.to_real()
        dt = r if dt is None else _dt.promote_types(dt, r)
    return (n,), dt


LBFGS_GATHER = Op(
    "_lbfgs_gather", _lbfgs_gather_kernel, None, differentiable=False, save_inputs=False,
    shape=_lbfgs_gather_shape,
    unsupported={"vjp": "an optimizer's flat copy of the gradients: not differentiable",
                 "batch": "belongs to one optimizer step; vmap over optimizer steps is not "
                          "supported"},
    doc="L-BFGS's flat gradient: the tensors flattened (complex ones as real pairs) and "
        "concatenated.")


def lbfgs_gather(grads):
    """One flat vector of ``grads`` (complex ones as their real pairs)."""
    return apply(LBFGS_GATHER, tuple(grads), {})


def _lbfgs_direction_kernel(xp, g, h_diag, *pairs, h):
    ys, ss, ro = pairs[:h], pairs[h:2 * h], pairs[2 * h:]
    # speed: 1-D ``.dot`` (BLAS dot; xp.matmul's gufunc call costs 3x more) and the ro's as
    # Python floats (a weak scalar: the product still rounds in g's dtype, as torch's does)
    ro = [float(r) for r in ro]
    q = -g
    al = [None] * h
    for i in range(h - 1, -1, -1):
        al[i] = ss[i].dot(q) * ro[i]
        q += ys[i] * -float(al[i])
    r = q * h_diag
    for i in range(h):
        be = ys[i].dot(r) * ro[i]
        r += ss[i] * float(al[i] - be)
    return (r, *(xp.asarray(a) for a in al))


def _lbfgs_direction_shape(g, h_diag, *pairs, h):
    return ((tuple(g.shape), g.dtype),) + (((), g.dtype),) * h


LBFGS_DIRECTION = Op(
    "_lbfgs_direction", _lbfgs_direction_kernel, None, differentiable=False,
    save_inputs=False, n_out=None, shape=_lbfgs_direction_shape,
    unsupported={"vjp": "an optimizer's internal quasi-Newton direction: not differentiable",
                 "batch": "the recursion belongs to one optimizer step; vmap over optimizer "
                          "steps is not supported"},
    doc="L-BFGS two-loop recursion; tensor inputs: g, h_diag, ys, ss, ros (h each). "
        "Returns the direction and the h first-loop coefficients.")


def lbfgs_direction(g, h_diag, ys, ss, ro):
    """The L-BFGS direction ``-H g`` and the first-loop coefficients, from the gradient
    ``g``, the initial scale ``h_diag`` (a 0-dim tensor) and the curvature pairs."""
    outs = apply(LBFGS_DIRECTION, (g, h_diag, *ys, *ss, *ro), {"h": len(ys)})
    return outs[0], list(outs[1:])


def _lbfgs_step_kernel(xp, *arrays, n, alpha):
    """params (n), then the flat direction; each param += alpha * its slice."""
    d = arrays[n]
    off = 0
    for a in arrays[:n]:
        x = real(a)
        k = x.size
        piece = d[off:off + k].reshape(x.shape)
        if x.dtype in _HALVES:  # torch computes a + alpha * b in float, rounding once
            x[...] = (x.astype(np.float32) + piece.astype(np.float32) * alpha).astype(x.dtype)
        else:
            x += piece * alpha
        off += k
    return ()


LBFGS_STEP = Op(
    "_lbfgs_step", _lbfgs_step_kernel, None, differentiable=False, save_inputs=False,
    n_out=None, shape=_no_outputs, unsupported=_UPDATE,
    doc="In-place L-BFGS parameter step; tensor inputs: params (n), the flat direction. "
        "Writes params += alpha * (their slices of the direction).")


def lbfgs_step(params, direction, alpha):
    """``p += alpha * direction[slice of p]`` for every parameter (complex ones through
    their real views), in one dispatch; bumps the parameters' version counters."""
    if not params:
        return
    apply(LBFGS_STEP, (*params, direction), {"n": len(params), "alpha": float(alpha)})
    for p in params:
        _version_of(p)[0] += 1
