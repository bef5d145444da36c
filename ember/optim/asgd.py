"""ASGD (``torch.optim.ASGD``): averaged stochastic gradient descent."""
import numpy as np

from ._functional import (ArrayOptimizer, check_lr, check_range, incr, param_and_grad, scalar,
                          state_arr, step_tensor, zeros_like)

__all__ = ["ASGD"]


class ASGD(ArrayOptimizer):
    """Implements Averaged Stochastic Gradient Descent.

    It has been proposed in `Acceleration of stochastic approximation by averaging`_.
    ``state["ax"]`` holds the running average of the parameter once ``step > t0``.
    """

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

        lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
        wd, maximize = group["weight_decay"], group["maximize"]
        for p, st in self._live(group, init):
            x, g = param_and_grad(p, maximize, wd)
            step = incr(st["step"])
            eta = float(st["eta"]._data)
            x *= 1 - lambd * eta
            x += np.multiply(g, -eta)
            ax = state_arr(st, "ax")
            mu = float(st["mu"]._data)
            if mu != 1:
                d = np.subtract(x, ax)
                d *= mu
                ax += d
            else:
                ax[...] = x
            st["eta"]._data[...] = lr / ((1 + lambd * lr * step) ** alpha)
            st["mu"]._data[...] = 1 / max(1, step - t0)
            self._bump_all(p, st)
