"""L-BFGS's search direction as one fused operator (``_lbfgs_direction``).

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
the scalar ``alpha`` of ``add_``).  Its decomposition is in
`ember.ops.decompositions.optim`.  The line search and the optimizer's state live in
`ember.optim.LBFGS`.
"""
from .._core.op import Op
from ._helpers import apply

__all__ = ["LBFGS_DIRECTION", "lbfgs_direction"]


def _lbfgs_direction_kernel(xp, g, h_diag, *pairs, h):
    ys, ss, ro = pairs[:h], pairs[h:2 * h], pairs[2 * h:]
    q = xp.negative(g)
    al = [None] * h
    for i in range(h - 1, -1, -1):
        al[i] = xp.multiply(xp.matmul(ss[i], q), ro[i])
        q += ys[i] * -float(al[i])
    r = xp.multiply(q, h_diag)
    for i in range(h):
        be = xp.multiply(xp.matmul(ys[i], r), ro[i])
        r += ss[i] * float(xp.subtract(al[i], be))
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
