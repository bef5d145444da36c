"""``ember.distributed.nn``: differentiable collectives (`functional`) and modules that live
on another RPC worker (`RemoteModule`)."""
from . import functional  # noqa: F401
from .api.remote_module import RemoteModule
from .functional import (all_gather, all_reduce, all_to_all, all_to_all_single, broadcast,
                         gather, reduce, reduce_scatter, scatter)

__all__ = ["RemoteModule", "all_gather", "all_reduce", "all_to_all", "all_to_all_single",
           "broadcast", "gather", "reduce", "reduce_scatter", "scatter"]
