"""Adadelta (``torch.optim.Adadelta``)."""
from ..ops.optim import ADADELTA_STEP, fused_step
from ._functional import (ArrayOptimizer, NumberArg, check_lr, check_range, l2_decay_arg,
                          step_tensor, zeros_like)

__all__ = ["Adadelta"]


class Adadelta(ArrayOptimizer):
    """Implements the Adadelta algorithm."""

    _capturable_xla = (False, False)

    _number_args = (l2_decay_arg(),
                    NumberArg("rho", "addcmul_ value"), NumberArg("lr", "add_ alpha"))

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        check_range("rho value", rho, 0.0, 1.0, hi_open=False)
        check_range("epsilon value", eps)
        check_range("weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        def init(p, st):
            st["step"] = step_tensor()
            st["square_avg"] = zeros_like(p)
            st["acc_delta"] = zeros_like(p)

        live = self._live(group, init)
        fused_step(ADADELTA_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in ("step", "square_avg", "acc_delta")],
                   lr=group["lr"], rho=group["rho"], eps=group["eps"],
                   weight_decay=group["weight_decay"], maximize=group["maximize"],
                   differentiable=group["differentiable"])
