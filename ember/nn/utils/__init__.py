"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, weight and spectral
normalisation, parametrizations, rnn packing and stateless functional_call."""
from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
from .fusion import *  # noqa: F401,F403
from .init import skip_init  # noqa: F401
from .memory_format import *  # noqa: F401,F403
from .spectral_norm import *  # noqa: F401,F403
from .weight_norm import *  # noqa: F401,F403
