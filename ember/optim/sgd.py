"""Stochastic gradient descent (``torch.optim.SGD``)."""
import numpy as np

from ._functional import (ArrayOptimizer, bump, check_fused, check_lr, check_range,
                          param_and_grad, real, scalar, zeros_like)

__all__ = ["SGD"]


class SGD(ArrayOptimizer):
    """Implements stochastic gradient descent (optionally with momentum)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        check_lr(lr)
        check_range("momentum value", momentum)
        check_range("weight_decay value", weight_decay)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)

    def _update_group(self, group):
        lr = scalar(group["lr"])
        momentum, dampening = group["momentum"], group["dampening"]
        nesterov, wd, maximize = group["nesterov"], scalar(group["weight_decay"]), \
            group["maximize"]
        for p in group["params"]:
            if p._grad is None:
                continue
            x, g = param_and_grad(p, maximize, wd)
            if momentum != 0:
                st = self.state[p]
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf = zeros_like(p)
                    real(buf._data)[...] = g
                    st["momentum_buffer"] = buf
                    b = real(buf._data)
                else:
                    b = real(buf._data)
                    b *= momentum
                    b += g * (1 - dampening)
                    bump(buf)
                g = g + b * momentum if nesterov else b
            x += np.multiply(g, -lr)
            bump(p)
