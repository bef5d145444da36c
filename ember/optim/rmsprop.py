"""RMSprop (``torch.optim.RMSprop``)."""
import numpy as np

from ._functional import (ArrayOptimizer, addcdiv_, addcmul_, check_lr, check_range, incr, lerp_,
                          param_and_grad, scalar, state_arr, step_tensor, zeros_like)

__all__ = ["RMSprop"]


class RMSprop(ArrayOptimizer):
    """Implements the RMSprop algorithm."""

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

        lr = scalar(group["lr"])
        alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
        maximize = group["maximize"]
        for p, st in self._live(group, init):
            incr(st["step"])
            x, g = param_and_grad(p, maximize, wd)
            sq = state_arr(st, "square_avg")
            sq *= alpha
            addcmul_(sq, g, g, 1 - alpha)
            if centered:
                ga = state_arr(st, "grad_avg")
                lerp_(ga, g, 1 - alpha)
                avg = sq.copy()
                addcmul_(avg, ga, ga, -1)
                np.sqrt(avg, out=avg)
            else:
                avg = np.sqrt(sq)
            avg += eps
            if momentum > 0:
                buf = state_arr(st, "momentum_buffer")
                buf *= momentum
                addcdiv_(buf, g, avg, 1)
                x += np.multiply(buf, -lr)
            else:
                addcdiv_(x, g, avg, -lr, scratch=avg)
            self._bump_all(p, st)
