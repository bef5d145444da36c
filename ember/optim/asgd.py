"""ASGD (``torch.optim.ASGD``): averaged stochastic gradient descent."""
from ..ops.optim import ASGD_STEP, fused_step
from ._functional import (ArrayOptimizer, check_lr, check_range, l2_decay_arg, scalar,
                          step_tensor, zeros_like)

__all__ = ["ASGD"]


class ASGD(ArrayOptimizer):
    """Implements Averaged Stochastic Gradient Descent.

    It has been proposed in `Acceleration of stochastic approximation by averaging`_.
    ``state["ax"]`` holds the running average of the parameter once ``step > t0``.
    """

    _capturable_names = ("params, mus, etas, and state_steps",) * 2

    _number_args = (l2_decay_arg(),)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_range("weight_decay value", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        lr = scalar(group["lr"])

        def init(p, st):
            st["step"] = step_tensor()
            st["eta"] = step_tensor(lr)
            st["mu"] = step_tensor(1.0)
            st["ax"] = zeros_like(p)

        live = self._live(group, init)
        fused_step(ASGD_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in ("step", "eta", "mu", "ax")],
                   lr=group["lr"], lambd=group["lambd"], alpha=group["alpha"],
                   t0=group["t0"], weight_decay=group["weight_decay"], maximize=group["maximize"],
                   differentiable=group["differentiable"])
