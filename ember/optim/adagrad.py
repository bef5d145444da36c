"""Adagrad (``torch.optim.Adagrad``)."""
from ..ops.optim import ADAGRAD_STEP, fused_step
from ._functional import (ArrayOptimizer, NumberArg, check_fused, check_lr, check_range,
                          dense_grads, fill_value, l2_decay_arg, step_tensor, zeros_like)

__all__ = ["Adagrad"]


class Adagrad(ArrayOptimizer):
    """Implements the Adagrad algorithm."""

    _sparse_refused = None  # sparse gradients taken (dense_grads)

    _number_args = (l2_decay_arg(), NumberArg("lr", "addcdiv_ value"),
                    NumberArg("lr_decay", "addcdiv_ value"))

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_lr(lr)
        check_range("lr_decay value", lr_decay)
        check_range("weight_decay value", weight_decay)
        check_range("initial_accumulator_value value", initial_accumulator_value)
        check_range("epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        check_fused(fused, foreach, differentiable)
        # Adagrad's state exists from construction on (torch does the same).
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, self.state[p])

    def _init_state(self, p, st):
        st["step"] = step_tensor()
        init = fill_value(self.defaults["initial_accumulator_value"])
        st["sum"] = zeros_like(p, complex(init, init) if p.is_complex() else init)

    def _update_group(self, group):
        live = self._live(group, self._init_state)
        params = [p for p, _ in live]
        grads = dense_grads(params, group["weight_decay"] != 0 and
                            "weight_decay option is not compatible with sparse gradients")
        fused_step(ADAGRAD_STEP, params, grads,
                   [[st["step"] for _, st in live], [st["sum"] for _, st in live]],
                   lr=group["lr"], lr_decay=group["lr_decay"], eps=group["eps"],
                   weight_decay=group["weight_decay"], maximize=group["maximize"],
                   differentiable=group["differentiable"])
