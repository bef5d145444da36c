"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``)."""
from ..ops.optim import ADAM_STEP, fused_step
from ._functional import (ArrayOptimizer, check_args, check_fused, fold_weight_decay,
                          l2_decay_arg, step_tensor, zeros_like)

__all__ = ["Adam", "AdamW"]


class Adam(ArrayOptimizer):
    """Implements the Adam algorithm (L2 weight decay, or decoupled as AdamW with
    ``decoupled_weight_decay=True``)."""

    _sparse_refused = "Adam does not support sparse gradients, please consider SparseAdam instead"

    _number_args = (l2_decay_arg("n"),)

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
        if group["differentiable"] and any(st["step"].requires_grad for _, st in live):
            raise RuntimeError("`requires_grad` is not supported for `step` in differentiable mode")
        keys = ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad else ())
        params, grads = [p for p, _ in live], [p._grad for p, _ in live]
        weight_decay = group["weight_decay"]
        if not group["decoupled_weight_decay"]:
            weight_decay = fold_weight_decay(group, params, grads, weight_decay)
        fused_step(ADAM_STEP, params, grads, [[st[k] for _, st in live] for k in keys],
                   lr=group["lr"], beta1=group["betas"][0],
                   beta2=group["betas"][1], eps=group["eps"],
                   weight_decay=weight_decay, amsgrad=amsgrad,
                   maximize=group["maximize"], decoupled=group["decoupled_weight_decay"],
                   differentiable=group["differentiable"])


class AdamW(Adam):
    """Implements the AdamW algorithm (Adam with decoupled weight decay)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
