"""``ember.nn.functional``: the functions behind the nn Modules (``torch.nn.functional``).

Each file's ``__all__`` is re-exported here; softmax/log_softmax are ops primitives.
"""
from ...ops.softmax import log_softmax, softmax  # noqa: F401
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .aten_forms import *  # noqa: F401,F403  (conv_tbc, grouped_mm)
from .linear_cross_entropy import linear_cross_entropy  # noqa: F401
from ._namespace_helpers import *  # noqa: F401,F403  (has_torch_function, boolean_dispatch, ...)
