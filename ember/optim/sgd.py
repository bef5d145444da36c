"""Stochastic gradient descent (``torch.optim.SGD``)."""
from ..ops.optim import SGD_STEP, fused_step
from ._functional import (ArrayOptimizer, NumberArg, check_fused, check_lr, check_range,
                          dense_grads, fold_weight_decay, zeros_like)

__all__ = ["SGD"]


class SGD(ArrayOptimizer):
    """Implements stochastic gradient descent (optionally with momentum)."""

    _sparse_refused = None  # sparse gradients taken (dense_grads)
    _foreach_autograd = True

    # (a weight_decay tensor that requires grad goes into the gradient with addcmul_)
    _number_args = (NumberArg("momentum", "add alpha", when=lambda g: g["nesterov"], modes="dn"),)

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
        momentum = group["momentum"]
        params = [p for p in group["params"] if p._grad is not None]
        bufs, fresh = [], ()
        if momentum != 0:
            fresh = []
            for p in params:
                st = self.state[p]
                buf = st.get("momentum_buffer")
                fresh.append(buf is None)  # the first step copies the gradient into it
                if buf is None:
                    buf = st["momentum_buffer"] = zeros_like(p)
                bufs.append(buf)
            fresh = tuple(fresh) if any(fresh) else ()
        grads = dense_grads(params, group["weight_decay"] != 0 and
                            "add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        weight_decay = fold_weight_decay(group, params, grads,
                                         group["weight_decay"])
        fused_step(SGD_STEP, params, grads, [bufs] if momentum != 0 else [],
                   lr=group["lr"], momentum=momentum, dampening=group["dampening"],
                   weight_decay=weight_decay, nesterov=group["nesterov"],
                   maximize=group["maximize"], differentiable=group["differentiable"], fresh=fresh)
