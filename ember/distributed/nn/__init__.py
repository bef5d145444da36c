"""``ember.distributed.nn``: modules that live on another RPC worker (`RemoteModule`)."""
from .api.remote_module import RemoteModule

__all__ = ["RemoteModule"]
