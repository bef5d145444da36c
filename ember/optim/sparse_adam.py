"""SparseAdam (``torch.optim.SparseAdam``): Adam masked to the gradient's non-zeros."""
import math

import numpy as np

from ._functional import (ArrayOptimizer, check_betas, check_lr, real, scalar, state_arr,
                          zeros_like)

__all__ = ["SparseAdam"]


class SparseAdam(ArrayOptimizer):
    """SparseAdam implements a masked version of the Adam algorithm suitable for sparse
    gradients: only the moments and parameter entries where the gradient is non-zero
    are updated.

    Sparse (COO) gradients update their stored entries, as torch's. Dense gradients are
    accepted too (torch raises for them): their non-zero entries play the part of the
    stored values, so a dense gradient and its ``to_sparse()`` give the same trajectory.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_lr(lr)
        if not 0.0 < scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, g in enumerate(self.param_groups)
                          for j, p in enumerate(g["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does "
                             f"not support complex parameters")

    def _update_group(self, group):
        def init(p, st):
            st["step"] = 0
            st["exp_avg"] = zeros_like(p)
            st["exp_avg_sq"] = zeros_like(p)

        lr = scalar(group["lr"])
        beta1, beta2 = group["betas"]
        eps = group["eps"]
        for p, st in self._live(group, init):
            st["step"] += 1
            step = st["step"]
            grad = p._grad
            x = real(p._data)
            if getattr(grad, "is_sparse", False):
                # a sparse gradient: its stored entries are the ones to update (torch takes
                # every stored value as non-zero), duplicates summed by coalesce
                grad = grad.coalesce()
                mask = np.zeros(tuple(grad.shape), dtype=bool)
                idx = tuple(np.asarray(grad._indices().numpy()))
                mask[idx] = True
                g = real(np.ascontiguousarray(grad.to_dense().numpy()))
            else:
                g = real(grad._data)
                mask = g != 0
            if group["maximize"]:
                g = np.negative(g)
            if not mask.any():
                continue
            gv = g[mask]
            m, v = state_arr(st, "exp_avg"), state_arr(st, "exp_avg_sq")
            old_m, old_v = m[mask], v[mask]
            dm = np.subtract(gv, old_m)
            dm *= 1 - beta1
            dv = np.square(gv)
            dv -= old_v
            dv *= 1 - beta2
            m[mask] += dm
            v[mask] += dv
            numer = dm + old_m
            denom = np.sqrt(dv + old_v)
            denom += eps
            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            numer /= denom
            x[mask] += numer * -step_size
            self._bump_all(p, st)
