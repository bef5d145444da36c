"""``ember.utils``: data loading, safetensors exchange, benchmarking helpers."""
from . import data  # noqa: F401
from . import benchmark  # noqa: F401
from . import checkpoint  # noqa: F401
from . import backcompat, dlpack, hooks, weak  # noqa: F401
from ._swap import set_module, swap_tensors  # noqa: F401
