"""``ember.nn``: Modules, Parameters, functional, init and utils (``torch.nn``)."""
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from . import attention, common_types, functional, grad, init, utils  # noqa: F401
from ._factory import factory_kwargs  # noqa: F401
from .modules.module import (register_module_forward_hook,  # noqa: F401
                             register_module_forward_pre_hook)
from . import parallel  # noqa: E402,F401
from .parallel import DataParallel  # noqa: E402,F401
