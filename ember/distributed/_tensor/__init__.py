"""``torch.distributed._tensor``, the older name of `ember.distributed.tensor`."""
from ..tensor import *  # noqa: F401,F403
from ..tensor import __all__  # noqa: F401
from ..tensor import placement_types  # noqa: F401
