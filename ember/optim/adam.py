"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``)."""
import numpy as np

from ._functional import (ArrayOptimizer, adam_moments, addcdiv_, check_args, check_fused, incr,
                          param_and_grad, scalar, state_arr, step_tensor, zeros_like)

__all__ = ["Adam", "AdamW"]


class Adam(ArrayOptimizer):
    """Implements the Adam algorithm (L2 weight decay, or decoupled as AdamW with
    ``decoupled_weight_decay=True``)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def _update_group(self, group):
        amsgrad = group["amsgrad"]

        def init(p, st):
            st["step"] = step_tensor()
            st["exp_avg"] = zeros_like(p)
            st["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                st["max_exp_avg_sq"] = zeros_like(p)

        live = self._live(group, init)
        if not live:
            return
        lr = scalar(group["lr"])
        beta1, beta2 = scalar(group["betas"][0]), scalar(group["betas"][1])
        eps, wd, decoupled = group["eps"], group["weight_decay"], group["decoupled_weight_decay"]
        maximize = group["maximize"]
        for p, st in live:
            x, g = param_and_grad(p, maximize, 0 if decoupled else wd)
            step = incr(st["step"])
            if wd != 0 and decoupled:
                x *= 1 - lr * wd
            m, v = adam_moments(st, g, beta1, beta2)
            if amsgrad:
                mx = state_arr(st, "max_exp_avg_sq")
                np.maximum(mx, v, out=mx)
                v = mx
            denom = np.sqrt(v)
            denom /= (1 - beta2 ** step) ** 0.5
            denom += eps
            addcdiv_(x, m, denom, -lr / (1 - beta1 ** step), scratch=denom)
            self._bump_all(p, st)


class AdamW(Adam):
    """Implements the AdamW algorithm (Adam with decoupled weight decay)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
