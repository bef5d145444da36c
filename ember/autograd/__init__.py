"""ember.autograd: reverse-mode automatic differentiation.

The graph is recorded by the dispatcher (one Node per operator application,
``ember._core.node``); this package runs it backward (`engine`), offers the
user-facing API (`backward`, `grad`, grad modes, `Function`, `gradcheck`,
anomaly detection) and attaches ``Tensor.backward`` / ``register_hook``.
"""
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .backward import backward, grad
from .function import Function, FunctionCtx, InplaceFunction, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled, set_multithreading_enabled)
from .._core.node import Node
from .variable import Variable

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "gradcheck",
           "gradgradcheck", "GradcheckError", "Node", "InplaceFunction",
           "is_inference_mode_enabled", "Variable", "set_multithreading_enabled"]


from . import forward_ad, functional  # noqa: E402,F401
from . import graph  # noqa: E402,F401
from . import grad_dtype as _grad_dtype  # noqa: E402,F401  (Tensor.grad_dtype)
from . import profiler  # noqa: E402,F401
