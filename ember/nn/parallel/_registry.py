"""What DDP and SyncBatchNorm use of ``ember.distributed``, registered by it on import.

``nn`` sits below ``distributed`` (the distributed package builds on nn and optim), so
nothing in ``nn`` imports it; ``ember.distributed`` hands itself, its default comm hooks
and its join module down here instead.  A process group needs ``ember.distributed``
imported, so before that there is nothing to run DDP on.
"""

_REG = {}

__all__ = ["register", "dist", "loaded_dist", "default_hooks", "join"]


def register(dist_module, default_hooks_module, join_module):
    _REG.update(dist=dist_module, default_hooks=default_hooks_module, join=join_module)


def _get(name):
    try:
        return _REG[name]
    except KeyError:
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call init_process_group (import ember.distributed).") from None


def dist():
    """The ``ember.distributed`` package."""
    return _get("dist")


def loaded_dist():
    """The ``ember.distributed`` package, or None while it was not imported."""
    return _REG.get("dist")


def default_hooks():
    """``ember.distributed.algorithms.ddp_comm_hooks.default_hooks``."""
    return _get("default_hooks")


def join():
    """``ember.distributed.algorithms.join``."""
    return _get("join")
