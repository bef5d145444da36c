"""Distributed autograd contexts: the per-worker record of one distributed forward pass.

A context holds, under the id that every worker shares, the tensors this worker sent in
that pass (keyed by send id: gradients for them come back from the receiver), the tensors
it received (keyed by the sender and its send id: their gradients go back to the sender),
and the gradients accumulated for this worker's leaves.  The current context is
thread-local, as torch's is; an RPC serving thread adopts the caller's context while it
runs the call.
"""
import itertools
import threading

_LOCK = threading.Lock()
_CONTEXTS = {}
_TLS = threading.local()
_COUNTER = itertools.count(1)
_WORKER = [0]


class _Context:
    __slots__ = ("id", "lock", "sends", "recvs", "grads", "peers")

    def __init__(self, context_id):
        self.id = context_id
        self.lock = threading.RLock()
        self.sends = {}
        self.recvs = {}
        self.grads = {}
        self.peers = set()

    def _context_id(self):
        return self.id


def set_worker_id(worker_id):
    _WORKER[0] = worker_id


def new_context():
    cid = (_WORKER[0] << 48) | next(_COUNTER)
    ctx = _Context(cid)
    with _LOCK:
        _CONTEXTS[cid] = ctx
    return ctx


def get_or_create(context_id):
    with _LOCK:
        ctx = _CONTEXTS.get(context_id)
        if ctx is None:
            ctx = _CONTEXTS[context_id] = _Context(context_id)
        return ctx


def lookup(context_id):
    with _LOCK:
        ctx = _CONTEXTS.get(context_id)
    if ctx is None:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return ctx


def release(context_id):
    with _LOCK:
        return _CONTEXTS.pop(context_id, None)


def clear_all():
    with _LOCK:
        _CONTEXTS.clear()


def current():
    return getattr(_TLS, "ctx", None)


def set_current(ctx):
    prev = getattr(_TLS, "ctx", None)
    _TLS.ctx = ctx
    return prev
