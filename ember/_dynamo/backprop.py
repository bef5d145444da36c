"""Reverse-mode differentiation of recorded ops through their vjps, on lazy tensors.

Both captured backwards use it: AOT autograd's joint graph (`ember._dynamo.aot_autograd`)
and a ``loss.backward()`` recorded into the pending graph of a compiled training step
(`ember._dynamo.step_backward`).  The vjps are ember ops, so running them while a capture
mode is active records the backward as more ops of the graph.
"""
from .._core import dtype as _dt
from .._core.tensor import Tensor

__all__ = ["backprop", "NotDifferentiable"]


class NotDifferentiable(Exception):
    """An op on the path has no derivative."""


class _Ctx:
    """What a vjp sees while the backward is recorded (see `ember._core.node._Ctx`)."""
    __slots__ = ("out", "needs_input_grad", "in_meta")

    def __init__(self, out, needs, in_meta):
        self.out = out
        self.needs_input_grad = needs
        self.in_meta = in_meta


def fit(g, shape, dtype):
    """A vjp result brought to its input's shape and dtype (as the engine does)."""
    if tuple(g.shape) != tuple(shape):
        g = g.sum_to_size(tuple(shape))
    if g.dtype.np != dtype:
        if g.dtype.is_complex and dtype.kind != "c":
            g = g.real
        g = g.to(_dt.FROM_NP[dtype])
    return g


def _acc(grads, t, g):
    old = grads.get(id(t))
    grads[id(t)] = g if old is None else old + g


def backprop(records, grads, rg):
    """Run the vjps of ``records`` (``(OpRecord, args, outs)`` in forward order) in
    reverse.  ``grads``: id(tensor) -> its gradient so far (the seeds), updated in place;
    ``rg``: id(tensor) -> whether it requires grad."""
    for rec, args, outs in reversed(records):
        gs = [grads.get(id(o)) for o in outs]
        if not rec.grad or not rec.op.differentiable or all(g is None for g in gs):
            continue
        needs = tuple(isinstance(a, Tensor) and rg.get(id(a), False) for a in args)
        if not any(needs):
            continue
        if rec.op.vjp is None:
            raise NotDifferentiable(f"operator {rec.op.name} has no derivative")
        if len(outs) > 1 or rec.op.n_out != 1:
            # an output without a gradient passes None, as the eager engine does (the
            # rule leaves its terms out: traced and eager backward compute the same thing)
            g = tuple(gs)
            out = tuple(outs)
        else:
            g = gs[0]
            out = outs[0]
        in_meta = [(tuple(a.shape), a.dtype.np) if isinstance(a, Tensor) else None
                   for a in args]
        r = rec.op.vjp(_Ctx(out, needs, in_meta), g, *args, **rec.params)
        if type(r) is not tuple and type(r) is not list:
            r = (r,)
        for a, need, gi, meta in zip(args, needs, r, in_meta):
            if need and gi is not None:
                _acc(grads, a, fit(gi, meta[0], meta[1]))
    return grads
