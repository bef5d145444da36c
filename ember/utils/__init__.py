"""``ember.utils``: data loading, safetensors exchange, benchmarking helpers."""
from . import data  # noqa: F401
from . import benchmark  # noqa: F401
from . import checkpoint  # noqa: F401
