"""``ember.utils``: data loading, safetensors exchange, benchmarking helpers."""
from . import data  # noqa: F401
from . import benchmark  # noqa: F401
from . import checkpoint  # noqa: F401
from . import backcompat, backend_registration, deterministic, dlpack, hooks, weak  # noqa: F401
from .backend_registration import (generate_methods_for_privateuse1_backend,  # noqa: F401
                                   rename_privateuse1_backend)
from . import _pytree  # noqa: F401  (torch.utils._pytree, imported by path)
from ._swap import set_module, swap_tensors  # noqa: F401
