"""`RRef`: a reference to a value that lives on one worker (its owner).

An RRef travels by (owner, id); arriving at its owner it becomes the owner's RRef again,
so ``local_value`` works there.

Reference counting: every RRef object, on any worker, holds a token that the owner counts
(see ``Agent.rref_add``); the object's finalizer releases it, and the owner drops the value
once no token is left, i.e. when no worker (the owner included) holds an RRef to it.
"""
from ...futures import Future
from . import _state

_PROXY_DUNDERS = {"__call__", "__getitem__", "__len__"}


class RRef:
    """A remote reference to a value of some type on a worker (its owner).

    ``RRef(value)`` makes an owner RRef of a local value, so it can be passed to other
    workers; `remote` returns RRefs to values that it creates on a remote worker.
    """

    def __init__(self, value, type_hint=None):
        agent = _state.agent()
        self._owner = agent.rank
        self._id = agent.new_id()
        self._token = None
        self._created = Future()
        self._created.set_result(None)
        agent.owned_future(self._id).set_result(value)
        self._type = type_hint
        agent.rref_add(self._id, self._id)
        self._token = self._id

    @classmethod
    def _make(cls, owner, rref_id, created=None, token=None):
        """An RRef object for ``rref_id``; ``token`` is its registration with the owner
        (already made by whoever created the object's reference)."""
        r = cls.__new__(cls)
        r._owner, r._id, r._type, r._token = owner, rref_id, None, token
        if created is None:
            created = Future()
            created.set_result(None)
        r._created = created
        return r

    def __del__(self):
        token = getattr(self, "_token", None)
        if token is None:
            return
        self._token = None
        try:
            agent = _state._AGENT[0]
            if agent is not None:
                agent.post_refcount("rdel", self._owner, self._id, token)
        except Exception:  # noqa: BLE001 - a finalizer must not raise (interpreter exit)
            pass

    def is_owner(self):
        """Returns whether or not the current node is the owner of this RRef."""
        return self._owner == _state.agent().rank

    def owner(self):
        """Returns worker information of the node that owns this RRef."""
        return _state.agent().infos[self._owner]

    def owner_name(self):
        """Returns worker name of the node that owns this RRef."""
        return self.owner().name

    def confirmed_by_owner(self):
        """Returns whether this RRef has been confirmed by the owner."""
        return self._created.done()

    def is_pyobj(self):
        return True

    def _get_future(self):
        """The Future of this RRef's creation on its owner."""
        return self._created

    def local_value(self):
        """If the current node is the owner, returns a reference to the local value;
        otherwise raises RuntimeError."""
        if not self.is_owner():
            raise RuntimeError(f"Cannot call localValue() on a non-local reference. Call it on "
                               f"{self.owner()}")
        return _state.agent().owned_future(self._id).wait()

    def to_here(self, timeout=-1.0):
        """Blocking call that copies the value of the RRef from the owner to the local node
        and returns it; on the owner it returns the local value."""
        if self.is_owner():
            return self.local_value()
        from . import rpc_sync
        return rpc_sync(self._owner, _fetch, args=(self,), timeout=timeout)

    def _proxy(self, how, timeout):
        return _Proxy(self, how, timeout)

    def rpc_sync(self, timeout=-1.0):
        """A proxy whose methods run on the owner with ``rpc_sync`` on the RRef's value:
        ``rref.rpc_sync().func(*args)`` is ``rpc_sync(rref.owner(), func-of-value, args)``."""
        return _Proxy(self, "rpc_sync", timeout)

    def rpc_async(self, timeout=-1.0):
        """As `rpc_sync` but each method call returns a Future."""
        return _Proxy(self, "rpc_async", timeout)

    def remote(self, timeout=-1.0):
        """As `rpc_sync` but each method call returns an RRef to its result on the owner."""
        return _Proxy(self, "remote", timeout)

    def __repr__(self):
        kind = "OwnerRRef" if self.is_owner() else "UserRRef"
        return f"{kind}(RRefId = GloballyUniqueId(created_on={self._id[0]}, local_id=" \
               f"{self._id[1]}))"


def _reduce_rref(r):
    # the receiver's object gets a token of its own, registered before the message leaves
    agent = _state.agent()
    token = agent.new_id()
    agent.post_refcount("radd", r._owner, r._id, token)
    return _from_wire, (r._owner, r._id, token)


def _from_wire(owner, rref_id, token=None):
    return RRef._make(owner, tuple(rref_id), token=tuple(token) if token is not None else None)


def _fetch(rref):
    return rref.local_value()


def _invoke(rref, name, args, kwargs):
    if name.startswith("__") and name not in _PROXY_DUNDERS:
        raise AttributeError(f"RRef proxy refused to call {name!r}: dunder methods other than "
                             f"{sorted(_PROXY_DUNDERS)} cannot be invoked remotely")
    return getattr(rref.local_value(), name)(*args, **kwargs)


class _Proxy:
    def __init__(self, rref, how, timeout):
        self._rref, self._how, self._timeout = rref, how, timeout

    def __getattr__(self, name):
        from . import remote, rpc_async, rpc_sync
        fn = {"rpc_sync": rpc_sync, "rpc_async": rpc_async, "remote": remote}[self._how]
        rref, timeout = self._rref, self._timeout

        def method(*args, **kwargs):
            return fn(rref._owner, _invoke, args=(rref, name, args, kwargs), timeout=timeout)
        return method
