"""``ember.distributed.autograd``: autograd across RPC (``torch.distributed.autograd``).

Inside ``with context() as context_id:``, every RPC that carries tensors requiring grad
records a *send* on the sender and a *receive* on the receiver (the received tensors are
the receiver's leaves for that pass).  `backward` runs the local graph from the roots,
accumulates the gradients of real leaves in the context (never in ``.grad``) and sends
the gradients of received tensors back to their senders, which continue from their
sends; it returns once every worker reached has finished.  `get_gradients` returns this
worker's accumulated ``{tensor: grad}``.

A worker's part of the graph may be visited once per gradient arriving at it; the
graph is therefore kept (``retain_graph`` in effect) until the context is released.
"""
import numpy as np

from ..._core.node import AccumulateGrad
from ..._core.tensor import wrap
from . import _context as _ctx

__all__ = ["context", "backward", "get_gradients"]


class context:  # noqa: N801 - torch's name
    """Context object to wrap forward and backward passes when using distributed autograd.

    The ``context_id`` generated in the ``with`` statement uniquely identifies a
    distributed backward pass on all workers."""

    def __enter__(self):
        if _ctx.current() is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        self._ctx = _ctx.new_context()
        _ctx.set_current(self._ctx)
        return self._ctx.id

    def __exit__(self, exc_type, exc, tb):
        _ctx.set_current(None)
        ctx = _ctx.release(self._ctx.id)
        if ctx is not None and ctx.peers:
            from ..rpc import _state
            agent = _state._AGENT[0]
            if agent is not None and agent.running:
                for peer in ctx.peers:
                    if peer != agent.rank:
                        agent.call(peer, "call", _release, (ctx.id,), {}, None, track=False)
        return False


def _release(context_id):
    _ctx.release(context_id)


def _leaves(outputs):
    found, seen = [], set()
    stack = []
    for t in outputs:
        if t.grad_fn is None:
            if id(t) not in seen:
                seen.add(id(t))
                found.append(t)
        else:
            stack.append(t.grad_fn)
    visited = set()
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if isinstance(nxt, AccumulateGrad):
                v = nxt.variable
                if v is not None and id(v) not in seen:
                    seen.add(id(v))
                    found.append(v)
            elif id(nxt) not in visited:
                stack.append(nxt)
    return found


def _local_pass(ctx, outputs, grads):
    from .._ember import autograd
    pairs = [(t, g) for t, g in zip(outputs, grads) if g is not None and t.requires_grad]
    if not pairs:
        return
    outputs = [t for t, _ in pairs]
    leaves = _leaves(outputs)
    if not leaves:
        return
    res = autograd.grad(outputs, leaves, [g for _, g in pairs], retain_graph=True,
                        allow_unused=True)
    with ctx.lock:
        where = {id(t): (key, i) for key, ts in ctx.recvs.items() for i, t in enumerate(ts)}
        outgoing = {}
        for leaf, g in zip(leaves, res):
            if g is None:
                continue
            hit = where.get(id(leaf))
            if hit is not None:
                key, i = hit
                slot = outgoing.setdefault(key, [None] * len(ctx.recvs[key]))
                slot[i] = g if slot[i] is None else slot[i] + g
            else:
                old = ctx.grads.get(leaf)
                ctx.grads[leaf] = g if old is None else old + g
    if outgoing:
        from ..rpc import _state
        agent = _state.agent()
        futs = [agent.call(src, "call", _backward_part, (ctx.id, send_id, gl), {}, 0,
                           track=False)
                for (src, send_id), gl in outgoing.items()]
        for f in futs:
            f.wait()


def _backward_part(context_id, send_id, grads):
    ctx = _ctx.lookup(context_id)
    with ctx.lock:
        tensors = ctx.sends.get(send_id)
    if tensors is None:
        raise RuntimeError(f"distributed autograd context {context_id} has no send {send_id}")
    _local_pass(ctx, tensors, grads)


def backward(context_id, roots, retain_graph=False):
    """Kicks off the distributed backward pass using the provided roots.

    Gradients are accumulated in the distributed autograd context of ``context_id`` on
    each worker involved (read them with `get_gradients`), not in ``.grad``.

    Args:
        context_id (int): the autograd context id for which gradients are retrieved.
        roots (list): tensors which represent the roots of the autograd computation;
            all should be scalars.
        retain_graph (bool): accepted for torch compatibility; the graph is kept until
            the context exits.
    """
    ctx = _ctx.lookup(context_id)
    roots = list(roots)
    for i, r in enumerate(roots):
        if r.numel() != 1:
            raise RuntimeError(f"dist_autograd.backward: root {i} has shape {tuple(r.shape)}; "
                               f"roots must be scalars")
        if not r.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
    _local_pass(ctx, roots, [wrap(np.ones_like(r._data)) for r in roots])


def get_gradients(context_id):
    """Retrieves a map from Tensor to the appropriate gradient for that Tensor accumulated
    in the provided context corresponding to the given ``context_id`` as part of the
    distributed autograd backward pass."""
    ctx = _ctx.lookup(context_id)
    with ctx.lock:
        return dict(ctx.grads)
