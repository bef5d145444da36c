"""RMSprop (``torch.optim.RMSprop``)."""
from ..ops.optim import RMSPROP_STEP, fused_step
from ._functional import (ArrayOptimizer, NumberArg, check_lr, check_range, l2_decay_arg,
                          scalar, step_tensor, zeros_like)

__all__ = ["RMSprop"]


class RMSprop(ArrayOptimizer):
    """Implements the RMSprop algorithm."""

    _capturable_xla = (True, True)

    _number_args = (l2_decay_arg(),
                    NumberArg("alpha", "addcmul_ value"),
                    NumberArg("lr", "addcdiv_ value", when=lambda g: not scalar(g["momentum"])),
                    NumberArg("lr", "add_ alpha", when=lambda g: scalar(g["momentum"]) > 0))

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_lr(lr)
        check_range("epsilon value", eps)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        check_range("alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        momentum, centered = group["momentum"], group["centered"]

        def init(p, st):
            st["step"] = step_tensor()
            st["square_avg"] = zeros_like(p)
            if momentum > 0:
                st["momentum_buffer"] = zeros_like(p)
            if centered:
                st["grad_avg"] = zeros_like(p)

        live = self._live(group, init)
        keys = ("step", "square_avg") + (("momentum_buffer",) if momentum > 0 else ()) + \
            (("grad_avg",) if centered else ())
        fused_step(RMSPROP_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in keys],
                   lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                   weight_decay=group["weight_decay"], momentum=momentum, centered=centered,
                   maximize=group["maximize"], differentiable=group["differentiable"])
