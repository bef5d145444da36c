"""Adamax (``torch.optim.Adamax``): Adam with the infinity norm."""
import numpy as np

from ._functional import (ArrayOptimizer, addcdiv_, check_args, incr, lerp_, param_and_grad,
                          scalar, state_arr, step_tensor, zeros_like)

__all__ = ["Adamax"]


class Adamax(ArrayOptimizer):
    """Implements the Adamax algorithm (a variant of Adam based on infinity norm)."""

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

        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
        for p, st in self._live(group, init):
            step = incr(st["step"])
            x, g = param_and_grad(p, maximize, wd)
            m, u = state_arr(st, "exp_avg"), state_arr(st, "exp_inf")
            lerp_(m, g, 1 - beta1)
            u *= beta2
            a = np.abs(g)
            a += eps
            np.maximum(u, a, out=u)
            addcdiv_(x, m, u, -lr / (1 - beta1 ** step), scratch=a)
            self._bump_all(p, st)
