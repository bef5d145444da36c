"""Dispatch state read on every operator call: per thread where torch's is, else shared.

``STATE`` answers the hot path's questions with one attribute load each: is grad mode
on, is any mode active.  Its fields are of two kinds, chosen per field to match torch:

Thread-local (each thread starts with torch's defaults, whatever other threads do):

- ``grad_enabled``: torch's grad mode is thread-local (``no_grad`` in one thread leaves
  another thread's autograd on; a new thread starts with grad enabled).
- ``inference``: ``inference_mode`` is a thread-local guard in torch.
- ``modes`` / ``intercept``: the dispatch-mode stack is per thread in torch (a tracer or
  profiler in one thread does not see another thread's ops); ``intercept`` is derived
  from ``modes`` and so lives with it.

Process-global (shared by every thread, held in ``SHARED``):

- ``seq``: creation order of autograd nodes.  The engine only compares the ``seq`` of
  nodes of one graph, and a graph can span threads (built in one, backpropagated in
  another), so one counter orders them all.
- ``overrides``: counts live ``__ember_function__`` sources (fx Proxies, registered
  override types).  Types are registered process-wide and a Proxy may be used in any
  thread, so the "scan arguments?" flag must be seen by every thread.
- ``anomaly``: torch's anomaly mode is one process-wide flag (``AnomalyMode::_enabled``).
- ``forward``: the number of forward-AD levels active in any thread.  Readers use it as
  a conservative "a tangent may be propagating" test (save output objects, skip fused
  C backward paths), which must hold whichever thread entered the level.  The levels
  themselves are per thread in ember (forward AD is a dispatch mode, and modes are per
  thread): a deviation from torch, whose levels are process-wide; a thread that makes
  dual tensors enters its own ``dual_level``.

``STATE`` is a ``threading.local`` subclass: its ``__init__`` runs once in every thread
that touches it, giving that thread the defaults above.  Reading a thread-local field
costs ~30 ns more than a plain slot (CPython looks up the thread's dict), so the hot
paths read process-global fields from ``SHARED`` (a plain slots object) directly;
``STATE.seq`` and friends are properties forwarding to ``SHARED`` for other code.

Counters in ``SHARED`` are bumped with ``+= 1`` under the GIL; a lost bump of ``seq``
under free threading would only tie two nodes' order (the engine breaks ties by id).
"""
import threading

__all__ = ["STATE", "SHARED"]


class _Shared:
    __slots__ = ("seq", "overrides", "anomaly", "forward")

    def __init__(self):
        self.seq = 0             # creation counter of autograd nodes
        # > 0 while an __ember_function__ override can be met: live fx Proxies, registered
        # override types (Tensor subclasses defining it register themselves).  Public
        # functions scan their arguments for overrides only then.
        self.overrides = 0
        self.anomaly = False     # detect_anomaly
        self.forward = 0         # active forward-AD levels


SHARED = _Shared()


def _forward_to_shared(name):
    def get(self):
        return getattr(SHARED, name)

    def set_(self, value):
        setattr(SHARED, name, value)
    return property(get, set_, doc=f"process-global: ``SHARED.{name}``")


class _State(threading.local):
    def __init__(self):
        self.grad_enabled = True
        self.inference = False
        self.modes = []          # dispatch modes of this thread, innermost last
        self.intercept = False   # True while any mode is pushed: apply() takes the slow path

    seq = _forward_to_shared("seq")
    overrides = _forward_to_shared("overrides")
    anomaly = _forward_to_shared("anomaly")
    forward = _forward_to_shared("forward")


STATE = _State()
