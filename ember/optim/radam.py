"""RAdam (``torch.optim.RAdam``): rectified Adam."""
import numpy as np

from ._functional import (ArrayOptimizer, adam_moments, check_args, incr, param_and_grad, scalar,
                          step_tensor, zeros_like)

__all__ = ["RAdam"]


class RAdam(ArrayOptimizer):
    """Implements the RAdam algorithm."""

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

        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        rho_inf = 2 / (1 - beta2) - 1
        for p, st in self._live(group, init):
            x, g = param_and_grad(p, maximize, 0 if decoupled else wd)
            step = incr(st["step"])
            if wd != 0 and decoupled:
                x *= 1 - lr * wd
            m, v = adam_moments(st, g, beta1, beta2)
            bc1 = 1 - beta1 ** step
            bc2 = 1 - beta2 ** step
            upd = np.divide(m, bc1)
            upd *= lr
            rho_t = rho_inf - 2 * step * beta2 ** step / bc2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf /
                        ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                # torch's ``scalar / tensor`` is ``tensor.reciprocal() * scalar``
                ad = np.sqrt(v)
                ad += eps
                np.reciprocal(ad, out=ad)
                ad *= bc2 ** 0.5
                upd *= ad
                upd *= rect
            x -= upd
            self._bump_all(p, st)
