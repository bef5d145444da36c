"""``ember.utils.benchmark``: Timer, Measurement, Compare, callgrind instruction
counts and fuzzing helpers, with ``torch.utils.benchmark``'s API."""
from .common import *  # noqa: F401,F403
from .timer import *  # noqa: F401,F403
from .compare import *  # noqa: F401,F403
from .fuzzer import *  # noqa: F401,F403
from .valgrind import *  # noqa: F401,F403
from . import common, compare, fuzzer, valgrind  # noqa: F401,E402
