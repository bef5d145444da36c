"""What the distributions' code calls ``ember`` (``ember.exp``, ``ember.float32``,
``ember.linalg.cholesky``, ...): the public functions, dtypes and packages it uses, taken
from the layers below the distributions.  Each module imports this under the name
``ember`` instead of the ember package itself, which is the layer above them; the names
are the package's own objects, so the code reads (and behaves) like torch.distributions.
"""
from .._core.dtype import *  # noqa: F401,F403
from .._core.tensor import Size, Tensor  # noqa: F401
from ..ops import *  # noqa: F401,F403
from .. import _core, autograd, linalg, nn, ops, special  # noqa: F401,E402
from ..autograd.grad_mode import enable_grad, no_grad  # noqa: F401,E402
from ..linalg.legacy import cholesky_inverse, cholesky_solve  # noqa: F401,E402
