"""RAdam (``torch.optim.RAdam``): rectified Adam."""
from ..ops.optim import RADAM_STEP, fused_step
from ._functional import (ArrayOptimizer, NumberArg, check_args, l2_decay_arg, step_tensor,
                          zeros_like)

__all__ = ["RAdam"]


class RAdam(ArrayOptimizer):
    """Implements the RAdam algorithm."""

    _number_args = (l2_decay_arg(),
                    NumberArg("betas", "addcmul_ value", index=1))

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        def init(p, st):
            st["step"] = step_tensor()
            st["exp_avg"] = zeros_like(p)
            st["exp_avg_sq"] = zeros_like(p)

        live = self._live(group, init)
        beta1, beta2 = group["betas"]
        fused_step(RADAM_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in ("step", "exp_avg", "exp_avg_sq")],
                   lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                   weight_decay=group["weight_decay"], maximize=group["maximize"],
                   differentiable=group["differentiable"],
                   decoupled=group["decoupled_weight_decay"])
