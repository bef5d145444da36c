"""The lite runtime's kernels, one per primitive: ``KERNELS[name](dt, *args, **params)``,
with ``dt`` the result dtype the graph recorded (a tuple for several outputs); the runner
casts each result to it."""
from ._elementwise import ELEMENTWISE
from ._extern import EXTERN
from ._structural import STRUCTURAL

__all__ = ["KERNELS"]

KERNELS = {**ELEMENTWISE, **STRUCTURAL, **EXTERN}
