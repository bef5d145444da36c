"""The derivative of a fused backward operator, taken from its decomposition.

A whole backward pass that is one kernel (the recurrent layers' backpropagation through
time) is an operator, so eager runs and traces compute the same thing.  Its own derivative
(double backward, forward AD over a gradient, hessians) would be a second derivation by
hand; instead it is the derivative of its decomposition, which is written in primitives that
each carry a vjp: the decomposition runs under grad mode on stand-ins of the inputs and
autograd's ``grad`` differentiates it.  The stand-in of an input with a history is an alias
of it, so the result is connected to that history and every higher order follows.

``grad`` lives in ember.autograd, above ops, so autograd registers it here (`GRAD`).
"""
from .._core.state import STATE
from .._core.tensor import Tensor

__all__ = ["vjp_from_decomposition", "GRAD"]

# [autograd.grad's implementation], registered by ember.autograd.backward
GRAD = []


def vjp_from_decomposition(name):
    """The vjp of the op called ``name``: that of its registered decomposition."""
    def vjp(ctx, grads, *inputs, **params):
        from .decompositions import decomposition_of
        grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
        need = ctx.needs_input_grad
        keep_graph = STATE.grad_enabled  # a create_graph backward: the result is differentiable
        args, wrt = list(inputs), []
        STATE.grad_enabled = True
        try:
            for k, x in enumerate(inputs):
                if need[k] and isinstance(x, Tensor):
                    if x._requires_grad:
                        args[k] = x.view_as(x)
                    else:  # not requires_grad_(), which vmap (jacrev, hessian) refuses
                        args[k] = x.detach()
                        args[k]._set_requires_grad(True)
                    wrt.append(k)
            outs = decomposition_of(name)(*args, **params)
            outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
            pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o._requires_grad]
            res = [None] * len(inputs)
            if pairs and wrt:
                got = GRAD[0]([o for o, _ in pairs], [args[k] for k in wrt],
                              [g for _, g in pairs], create_graph=keep_graph, allow_unused=True)
                for k, g in zip(wrt, got):
                    res[k] = g
        finally:
            STATE.grad_enabled = keep_graph
        return tuple(res)
    return vjp
