"""Adafactor (``torch.optim.Adafactor``): Adam-like steps with factored second moments.

For a matrix-shaped parameter the second moment is kept as a row and a column
average (their outer product, over the row mean, estimates it), so optimizer state
grows with rows + columns rather than rows x columns.
"""
import numpy as np

from ._functional import (ArrayOptimizer, incr, lerp_, param_and_grad, scalar, state_arr,
                          step_tensor, zeros_like)
from .._core.tensor import wrap

__all__ = ["Adafactor"]


def _norm(a):
    return float(np.sqrt(np.sum(np.square(a, dtype=a.dtype), dtype=a.dtype)))


class Adafactor(ArrayOptimizer):
    """Implements Adafactor algorithm (`Adafactor: Adaptive Learning Rates with Sublinear
    Memory Cost`), as torch formulates it: relative step size ``min(lr, 1/sqrt(t))``
    scaled by the parameter's RMS, second-moment decay ``1 - t ** beta2_decay``, update
    clipping at RMS ``d``, decoupled weight decay."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _update_group(self, group):
        def init(p, st):
            st["step"] = step_tensor()
            shape = p._grad._data.shape
            if len(shape) > 1:
                st["row_var"] = wrap(np.zeros(shape[:-1] + (1,), p._grad._data.dtype))
                st["col_var"] = wrap(np.zeros(shape[:-2] + (1, shape[-1]),
                                              p._grad._data.dtype))
            else:
                st["variance"] = zeros_like(p._grad)

        for p in group["params"]:
            if p._grad is not None and p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
        lr = scalar(group["lr"])
        eps1, eps2 = group["eps"]
        d, wd, decay = group["d"], group["weight_decay"], group["beta2_decay"]
        for p, st in self._live(group, init):
            x, g = param_and_grad(p, group["maximize"], 0)
            if eps1 is None:
                # torch fixes it from the first parameter of the group
                eps1 = float(np.finfo(p._data.dtype).eps)
            step = incr(st["step"])
            w = step ** decay
            rho = min(lr, 1 / step ** 0.5)
            alpha = max(eps2, _norm(x) / x.size ** 0.5) * rho
            if wd != 0:
                x *= 1 - lr * wd
            if g.ndim > 1 and p._grad._data.ndim > 1:
                row, col = state_arr(st, "row_var"), state_arr(st, "col_var")
                lerp_(row, np.mean(np.square(g), axis=-1, keepdims=True), w)
                lerp_(col, np.mean(np.square(g), axis=-2, keepdims=True), w)
                est = np.matmul(row, col)
                est /= np.maximum(np.mean(row, axis=-2, keepdims=True), eps1)
            else:
                var = state_arr(st, "variance")
                lerp_(var, np.square(g), w)
                est = var.copy()
            np.maximum(est, eps1 * eps1, out=est)
            upd = np.sqrt(est)
            np.divide(1, upd, out=upd)
            upd *= g
            denom = max(1.0, _norm(upd) / (upd.size ** 0.5 * d))
            upd *= -alpha / denom
            x += upd
            self._bump_all(p, st)

