"""All nn Modules; each file's ``__all__`` is re-exported as ``ember.nn.<name>``."""
from .module import Module  # noqa: F401
from .container import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .batchnorm import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from .instancenorm import (LazyInstanceNorm1d, LazyInstanceNorm2d,  # noqa: F401
                           LazyInstanceNorm3d)
from .syncbatchnorm import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
