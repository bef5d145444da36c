"""Every operator of ember, each defined once (see ``ember._core.op.Op``).

Importing a module registers its operators, public functions and Tensor
methods; ``__all__`` of each module is re-exported as ``ember.<name>``.
"""
from . import (pointwise, conversion, views, reduce_basic, creation, reduction, sorting,  # noqa
               shape, indexing, blas, random, softmax, complex_ops, pointwise_misc, misc,
               spectral, pointwise_backward)
from .blas import *  # noqa: F401,F403
from .complex_ops import *  # noqa: F401,F403
from .conversion import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .pointwise_misc import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .reduce_basic import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .softmax import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403
from .._core.op import REGISTRY  # noqa: F401
from . import _batching  # noqa: E402,F401  (batching rules; after the ops they name)
# the operators of the libraries above (ember.linalg, ember.special, ember.fft,
# ember.distributions); their public functions live in those packages.  The names are
# dropped here so that ``from ember.ops import *`` in ember/__init__.py cannot shadow the
# public packages of the same name (the modules stay importable by their full names).
from . import linalg, special, fft, distributions  # noqa: E402
del linalg, special, fft, distributions
# the nn operators (ember.ops.nn; their public functions live in ember.nn.functional)
from . import nn  # noqa: E402
del nn
from . import decompositions  # noqa: E402,F401  (decompositions by op name; after every op)
from . import op_namespaces as _op_namespaces  # noqa: E402  (ember.ops.aten, ember.ops.<ns>)
del op_namespaces  # noqa: F821  (kept out of ``from ember.ops import *``; still importable)
import importlib as _importlib  # noqa: E402


def __getattr__(name):
    """``ember.ops.aten``, ``ember.ops.<custom namespace>``: operator namespaces made on
    demand, as ``torch.ops`` makes them (``op_namespaces``); a submodule of ember.ops
    dropped from this namespace above still imports as itself."""
    if name.startswith("__") or not name.isidentifier():
        raise AttributeError(f"module 'ember.ops' has no attribute '{name}'")
    if _op_namespaces.is_submodule(name):
        return _importlib.import_module(f"{__name__}.{name}")
    if _op_namespaces.is_namespace_name(name):
        return _op_namespaces.namespace(name)
    raise AttributeError(f"module 'ember.ops' has no attribute '{name}'")
