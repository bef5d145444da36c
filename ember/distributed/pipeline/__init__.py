"""``ember.distributed.pipeline`` (PyTorch 1.8's pipeline parallelism): see `sync.Pipe`."""
from . import sync  # noqa: F401
