"""Muon (``torch.optim.Muon``): momentum, orthogonalised by a Newton-Schulz iteration.

Each 2-D parameter's (Nesterov) momentum is replaced by an approximately orthogonal
matrix of the same shape (a quintic Newton-Schulz iteration, in bfloat16 as torch
runs it: every matrix product is rounded to bfloat16), and the step is scaled for
the matrix's aspect ratio.
"""
from ..ops.optim import MUON_STEP, fused_step
from ._functional import ArrayOptimizer, scalar, zeros_like

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _check(grad, ns_coefficients, ns_steps):
    # torch's checks of its Newton-Schulz iteration, before any state is written
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")


class Muon(ArrayOptimizer):
    """Implements Muon algorithm (MomentUm Orthogonalized by Newton-schulz), for the 2-D
    parameters of hidden layers; other parameters (biases, embeddings) belong to a
    standard optimizer such as AdamW.

    Args:
        lr (float, optional): learning rate (default: 1e-3).
        weight_decay (float, optional): decoupled weight decay (default: 0.1)
        momentum (float, optional): momentum factor (default: 0.95)
        nesterov (bool, optional): enables Nesterov momentum (default: True)
        ns_coefficients (tuple of three floats): the Newton-Schulz polynomial's
            coefficients (a, b, c)
        eps (float, optional): term added to the denominator for numerical stability
        ns_steps (int, optional): number of Newton-Schulz iteration steps (default: 5)
        adjust_lr_fn (str, optional): "original" (the default) or "match_rms_adamw".
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _update_group(self, group):
        def init(p, st):
            st["momentum_buffer"] = zeros_like(p._grad)

        for p in group["params"]:
            if p._grad is not None and p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
        live = self._live(group, init)
        for p, _ in live:
            if p._grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            _check(p._grad, group["ns_coefficients"], group["ns_steps"])
        fused_step(MUON_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st["momentum_buffer"] for _, st in live]], lr=scalar(group["lr"]),
                   weight_decay=group["weight_decay"], momentum=group["momentum"],
                   nesterov=group["nesterov"], ns_coefficients=tuple(group["ns_coefficients"]),
                   eps=group["eps"], ns_steps=group["ns_steps"],
                   adjust_lr_fn=group["adjust_lr_fn"])
