"""SparseAdam (``torch.optim.SparseAdam``): Adam masked to the gradient's non-zeros."""

from .._core import dtype as _dt
from ..ops.creation import zeros_like as _zeros_like
from ..ops.optim import SPARSE_ADAM_STEP, fused_step
from ._functional import ArrayOptimizer, check_betas, check_lr, scalar, zeros_like

__all__ = ["SparseAdam"]


class SparseAdam(ArrayOptimizer):
    """SparseAdam implements a masked version of the Adam algorithm suitable for sparse
    gradients: only the moments and parameter entries where the gradient is non-zero
    are updated.

    Sparse (COO) gradients update their stored entries, as torch's. Dense gradients are
    accepted too (torch raises for them): their non-zero entries play the part of the
    stored values, so a dense gradient and its ``to_sparse()`` give the same trajectory.
    """

    _sparse_refused = None  # made for sparse gradients

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

        beta1, beta2 = group["betas"]
        live = self._live(group, init)
        grads, masks = [], []
        for p, st in live:
            st["step"] += 1
            grad = p._grad
            if getattr(grad, "is_sparse", False):
                # a sparse gradient: its stored entries are the ones to update (torch takes
                # every stored value as non-zero), duplicates summed by coalesce
                grad = grad.coalesce()
                dense = grad.to_dense()
                mask = _zeros_like(dense, dtype=_dt.bool)
                mask[tuple(grad._indices())] = True
                grads.append(dense)
                masks.append(mask)
            else:
                grads.append(grad)
                masks.append(grad != 0)
        fused_step(SPARSE_ADAM_STEP, [p for p, _ in live], grads,
                   [masks, [st["exp_avg"] for _, st in live],
                    [st["exp_avg_sq"] for _, st in live]],
                   lr=scalar(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                   maximize=group["maximize"], steps=tuple(st["step"] for _, st in live))
