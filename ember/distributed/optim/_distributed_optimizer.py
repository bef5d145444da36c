"""`DistributedOptimizer`: one local optimizer per owner of the parameters, stepped with
the gradients of a distributed autograd context."""
import threading

from .. import autograd as dist_autograd
from .. import rpc

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    # one lock per class, as several DistributedOptimizers may share an owner's parameters
    _lock = threading.Lock()

    def __init__(self, optim_cls, local_params_rref, *args, **kwargs):
        self._params = [r.local_value() for r in local_params_rref]
        self.optim = optim_cls(self._params, *args, **kwargs)

    def step(self, autograd_ctx_id):
        grads = dist_autograd.get_gradients(autograd_ctx_id)
        with _LocalOptimizer._lock:
            for p in self._params:
                p.grad = grads.get(p)
            self.optim.step()


def _local_step(opt_rref, autograd_ctx_id):
    opt_rref.local_value().step(autograd_ctx_id)


class DistributedOptimizer:
    """DistributedOptimizer takes remote references to parameters scattered across
    workers and applies the given optimizer locally for each parameter.

    Args:
        optimizer_class (optim.Optimizer): the class of optimizer to instantiate on each
            worker.
        params_rref (list[RRef]): list of RRefs to local or remote parameters to optimize.
        args: arguments to pass to the optimizer constructor on each worker.
        kwargs: arguments to pass to the optimizer constructor on each worker.
    """

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        by_owner = {}
        for r in params_rref:
            by_owner.setdefault(r.owner(), []).append(r)
        self.remote_optimizers = [
            rpc.remote(owner, _LocalOptimizer, args=(optimizer_class, rrefs) + tuple(args),
                       kwargs=kwargs)
            for owner, rrefs in by_owner.items()]
        for r in self.remote_optimizers:
            r._get_future().wait()

    def step(self, context_id):
        """Performs a single optimization step on every worker holding parameters, each
        with the gradients accumulated in distributed autograd context ``context_id``."""
        dist_autograd.get_gradients(context_id)  # raises for an unknown context id
        futs = [rpc.rpc_async(r.owner(), _local_step, args=(r, context_id))
                for r in self.remote_optimizers]
        errors = []
        for f in futs:
            try:
                f.wait()
            except Exception as e:  # noqa: BLE001 - wait for all, then raise the first
                errors.append(e)
        if errors:
            raise errors[0]
