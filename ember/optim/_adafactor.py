"""Adafactor (``torch.optim.Adafactor``): Adam-like steps with factored second moments.

For a matrix-shaped parameter the second moment is kept as a row and a column
average (their outer product, over the row mean, estimates it), so optimizer state
grows with rows + columns rather than rows x columns.
"""
import numpy as np

from ..ops.creation import zeros
from ..ops.optim import ADAFACTOR_STEP, fused_step
from ._functional import ArrayOptimizer, scalar, step_tensor, zeros_like

__all__ = ["Adafactor"]


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
            shape = tuple(p._grad.shape)
            if len(shape) > 1:
                like = dict(dtype=p._grad.dtype, device=p._grad.device)
                st["row_var"] = zeros(shape[:-1] + (1,), **like)
                st["col_var"] = zeros(shape[:-2] + (1, shape[-1]), **like)
            else:
                st["variance"] = zeros_like(p._grad)

        for p in group["params"]:
            if p._grad is not None and p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
        eps1, eps2 = group["eps"]
        live = self._live(group, init)
        if not live:
            return
        if eps1 is None:
            # torch fixes it from the first parameter of the group
            eps1 = float(np.finfo(live[0][0].dtype.np).eps)
        factored = tuple(p._grad.dim() > 1 for p, _ in live)
        firsts = [st["row_var"] if f else st["variance"] for (_, st), f in zip(live, factored)]
        seconds = [st["col_var"] if f else st["variance"] for (_, st), f in zip(live, factored)]
        fused_step(ADAFACTOR_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st["step"] for _, st in live], firsts, seconds],
                   lr=scalar(group["lr"]), eps1=eps1, eps2=eps2, d=group["d"],
                   weight_decay=group["weight_decay"], beta2_decay=group["beta2_decay"],
                   maximize=group["maximize"], factored=factored)
