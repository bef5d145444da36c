"""What the distributed code calls ``ember`` (``ember.zeros_like``, ``ember.save``,
``ember.no_grad``, ...): the public names it uses, taken from the layers below
``ember.distributed``.  Modules import this instead of the ember package, which assembles
the public namespace above every subsystem; the objects are the package's own.
"""
from .._core.device import device  # noqa: F401
from .._core.dtype import *  # noqa: F401,F403
from .._core.tensor import Tensor  # noqa: F401
from ..ops import *  # noqa: F401,F403
from ..ops.creation import tensor  # noqa: F401
from .. import autograd  # noqa: F401
from ..autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401
from ..serialization import load, save  # noqa: F401
