"""Adamax (``torch.optim.Adamax``): Adam with the infinity norm."""
from ..ops.optim import ADAMAX_STEP, fused_step
from ._functional import (ArrayOptimizer, NumberArg, check_args, l2_decay_arg, step_tensor,
                          zeros_like)

__all__ = ["Adamax"]


class Adamax(ArrayOptimizer):
    """Implements the Adamax algorithm (a variant of Adam based on infinity norm)."""

    _number_args = (l2_decay_arg(), NumberArg("betas", "addcdiv_ value", index=0),
                    NumberArg("lr", "addcdiv_ value"))

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        def init(p, st):
            st["step"] = step_tensor()
            st["exp_avg"] = zeros_like(p)
            st["exp_inf"] = zeros_like(p)

        live = self._live(group, init)
        beta1, beta2 = group["betas"]
        fused_step(ADAMAX_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in ("step", "exp_avg", "exp_inf")],
                   lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                   weight_decay=group["weight_decay"], maximize=group["maximize"],
                   differentiable=group["differentiable"])
