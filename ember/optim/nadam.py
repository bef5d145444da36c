"""NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum."""
import numpy as np

from ._functional import (ArrayOptimizer, adam_moments, addcdiv_, check_args, check_range, incr,
                          param_and_grad, scalar, step_tensor, zeros_like)

__all__ = ["NAdam"]


class NAdam(ArrayOptimizer):
    """Implements the NAdam algorithm."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_args(lr, eps, betas, weight_decay)
        check_range("momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        def init(p, st):
            st["step"] = step_tensor()
            st["mu_product"] = step_tensor(1.0)
            st["exp_avg"] = zeros_like(p)
            st["exp_avg_sq"] = zeros_like(p)

        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        eps, wd, maximize = group["eps"], group["weight_decay"], group["maximize"]
        decoupled, md = group["decoupled_weight_decay"], group["momentum_decay"]
        for p, st in self._live(group, init):
            x, g = param_and_grad(p, maximize, 0 if decoupled else wd)
            step = incr(st["step"])
            bc2 = 1 - beta2 ** step
            if wd != 0 and decoupled:
                x *= 1 - lr * wd
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * md))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
            # mu_product is a scalar-dtype tensor in torch: the product rounds in that dtype.
            mp = st["mu_product"]._data
            mp *= mu
            mp = float(mp)
            m, v = adam_moments(st, g, beta1, beta2)
            denom = np.divide(v, bc2)
            np.sqrt(denom, out=denom)
            denom += eps
            addcdiv_(x, g, denom, -lr * (1.0 - mu) / (1.0 - mp))
            addcdiv_(x, m, denom, -lr * mu_next / (1.0 - mp * mu_next))
            self._bump_all(p, st)
