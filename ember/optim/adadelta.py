"""Adadelta (``torch.optim.Adadelta``)."""
import numpy as np

from ._functional import (ArrayOptimizer, addcmul_, check_lr, check_range, incr, param_and_grad,
                          scalar, state_arr, step_tensor, zeros_like)

__all__ = ["Adadelta"]


class Adadelta(ArrayOptimizer):
    """Implements the Adadelta algorithm."""

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

        lr = scalar(group["lr"])
        rho, eps, wd, maximize = group["rho"], group["eps"], group["weight_decay"], \
            group["maximize"]
        for p, st in self._live(group, init):
            incr(st["step"])
            x, g = param_and_grad(p, maximize, wd)
            sq, acc = state_arr(st, "square_avg"), state_arr(st, "acc_delta")
            sq *= rho
            addcmul_(sq, g, g, 1 - rho)
            std = np.add(sq, eps)
            np.sqrt(std, out=std)
            delta = np.add(acc, eps)
            np.sqrt(delta, out=delta)
            delta /= std
            delta *= g
            acc *= rho
            addcmul_(acc, delta, delta, 1 - rho)
            delta *= -lr
            x += delta
            self._bump_all(p, st)
