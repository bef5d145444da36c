"""The collective steps of a save or load, with errors gathered from every rank.

Each step runs locally on every rank; failures travel with the results, so all ranks see
the same outcome and raise the same `CheckpointException` instead of some hanging in the
next collective.  Without a process group (``no_dist``) it is one rank doing every step.
"""
from ._codec import decode, encode
from .api import CheckpointException


def _dist():
    from ... import distributed as dist
    return dist


class _Failure:
    def __init__(self, exc):
        self.exc = exc


class DistWrapper:
    def __init__(self, group, use_dist, coordinator_rank=0):
        self.group = group
        self.use_dist = use_dist
        if use_dist:
            dist = _dist()
            self.rank = dist.get_rank(group)
            self.world_size = dist.get_world_size(group)
            self.coordinator_rank = coordinator_rank
            self._coord_global = (dist.get_global_rank(group, coordinator_rank)
                                  if group is not None else coordinator_rank)
        else:
            self.rank, self.world_size, self.coordinator_rank = 0, 1, 0
        self.is_coordinator = self.rank == self.coordinator_rank

    # plain-data transport ---------------------------------------------------------------
    @staticmethod
    def _pack(value):
        if isinstance(value, _Failure):
            return ["fail", encode(value.exc)]
        return ["ok", encode(value)]

    @staticmethod
    def _unpack(raw):
        kind, body = raw
        return _Failure(decode(body)) if kind == "fail" else decode(body)

    def _gather(self, value):
        if not self.use_dist:
            return [value]
        dist = _dist()
        out = [None] * self.world_size if self.is_coordinator else None
        dist.gather_object(self._pack(value), out, dst=self._coord_global, group=self.group)
        return [self._unpack(r) for r in out] if self.is_coordinator else None

    def _scatter(self, values):
        if not self.use_dist:
            return values[0]
        dist = _dist()
        out = [None]
        packed = [self._pack(v) for v in values] if self.is_coordinator else None
        dist.scatter_object_list(out, packed, src=self._coord_global, group=self.group)
        return self._unpack(out[0])

    def _broadcast(self, value):
        if not self.use_dist:
            return value
        dist = _dist()
        box = [self._pack(value) if self.is_coordinator else None]
        dist.broadcast_object_list(box, src=self._coord_global, group=self.group)
        return self._unpack(box[0])

    @staticmethod
    def _run(fun, *args):
        try:
            return fun(*args)
        except Exception as e:  # reported to every rank by the caller
            return _Failure(e)

    def _raise_if_failed(self, step, gathered):
        failures = {r: v.exc for r, v in enumerate(gathered) if isinstance(v, _Failure)}
        if failures:
            return _Failure(CheckpointException(step, failures))
        return None

    @staticmethod
    def _result(step, value):
        if isinstance(value, _Failure):
            exc = value.exc
            if isinstance(exc, CheckpointException):
                raise exc
            raise CheckpointException(step, {0: exc})
        return value

    # steps ------------------------------------------------------------------------------
    def reduce_scatter(self, step, map_fun, reduce_fun):
        """map_fun on every rank; reduce_fun(all results) on the coordinator gives one
        result per rank."""
        local = self._run(map_fun)
        gathered = self._gather(local)
        out = None
        if self.is_coordinator:
            failed = self._raise_if_failed(step, gathered)
            if failed is None:
                res = self._run(reduce_fun, gathered)
                out = [res] * self.world_size if isinstance(res, _Failure) else res
            else:
                out = [failed] * self.world_size
        return self._result(step, self._scatter(out))

    def all_reduce(self, step, map_fun, reduce_fun):
        """map_fun on every rank; reduce_fun(all results) on the coordinator, whose result
        every rank returns."""
        local = self._run(map_fun)
        gathered = self._gather(local)
        out = None
        if self.is_coordinator:
            failed = self._raise_if_failed(step, gathered)
            out = failed if failed is not None else self._run(reduce_fun, gathered)
        return self._result(step, self._broadcast(out))

    def all_gather(self, step, map_fun):
        """map_fun on every rank; every rank gets all the results."""
        return self.all_reduce(step, map_fun, lambda results: results)
