"""``ember.func``: composable function transforms (``torch.func``)."""
from ..nn.utils.stateless import _functional_call as functional_call
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._vmap import vmap
from ._functionalize import functionalize
from ._rearrange import rearrange
from ._module_state import stack_module_state
from ._helpers import debug_unwrap, replace_all_batch_norm_modules_
from ..autograd import functional as _autograd_functional

# torch.autograd.functional.jacobian(vectorize=True / strategy="forward-mode") runs on these
_autograd_functional.FUNC_TRANSFORMS.update(vmap=vmap, jacfwd=jacfwd)

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "functional_call", "stack_module_state", "debug_unwrap",
           "replace_all_batch_norm_modules_", "functionalize", "rearrange"]
