"""torch's refusal of tensor arguments that its derivative formulas do not cover.

A few operators take tensors that no gradient flows to (``linalg_pinv``'s ``atol``/``rtol``,
``native_batch_norm``'s running statistics, the class ``weight`` of ``nll_loss``...).  torch
raises when grad mode is on and such an argument requires grad, rather than silently
leaving it without a gradient; ``refuse_grad`` is that check, called by the public
function before it computes.
"""
from .._core.state import STATE
from .._core.tensor import Tensor

__all__ = ["refuse_grad"]


def refuse_grad(function, **arguments):
    """Raise torch's RuntimeError if grad mode is on and one of ``arguments`` (tensors or
    None, by argument name) requires grad; ``function`` is torch's name of the kernel."""
    if not STATE.grad_enabled:
        return
    for name, t in arguments.items():
        if isinstance(t, Tensor) and t.requires_grad:
            raise RuntimeError(f"The function '{function}' is not differentiable with respect "
                               f"to argument '{name}'. This input cannot have requires_grad "
                               f"True.")
