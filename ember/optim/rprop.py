"""Rprop (``torch.optim.Rprop``): resilient backpropagation."""
from ..ops.optim import RPROP_STEP, fused_step
from .._core.tensor import Tensor
from ._functional import ArrayOptimizer, check_lr, fill_value, step_tensor, zeros_like

__all__ = ["Rprop"]


class Rprop(ArrayOptimizer):
    """Implements the resilient backpropagation algorithm.

    Each element keeps its own step size: multiplied by ``etaplus`` while the gradient
    keeps its sign, by ``etaminus`` when it flips (and that step is skipped), clamped to
    ``step_sizes``; the parameter moves by the step size against the gradient's sign.
    """

    _capturable_xla = (True, True)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update_group(self, group):
        def init(p, st):
            lr = fill_value(group["lr"])
            st["step"] = step_tensor()
            st["prev"] = zeros_like(p)
            # a complex element is two real ones: both parts start at lr
            st["step_size"] = zeros_like(p, fill=complex(lr, lr) if p.is_complex() else lr)

        live = self._live(group, init)
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        if live:
            _check_clamp_args(lo, hi)
        fused_step(RPROP_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in ("step", "prev", "step_size")],
                   etaminus=etaminus, etaplus=etaplus, step_size_min=lo, step_size_max=hi,
                   maximize=group["maximize"], differentiable=group["differentiable"])


def _check_clamp_args(lo, hi):
    """torch clamps the step sizes with ``clamp_(lo, hi)``: two tensors, or two numbers (a
    0-dim tensor that does not require grad reads as one); anything else is its
    TypeError."""
    def number(x):
        return not isinstance(x, Tensor) or not x.requires_grad
    if isinstance(lo, Tensor) and isinstance(hi, Tensor) or number(lo) and number(hi):
        return
    got = ", ".join("Tensor" if isinstance(x, Tensor) else type(x).__name__ for x in (lo, hi))
    marked = ", ".join(f"!{t}!" for t in got.split(", "))
    raise TypeError(f"clamp_() received an invalid combination of arguments - got ({got}), but "
                    f"expected one of:\n * (Tensor min = None, Tensor max = None)\n      didn't "
                    f"match because some of the arguments have invalid types: ({marked})\n * "
                    f"(Number min = None, Number max = None)\n      didn't match because some of "
                    f"the arguments have invalid types: ({marked})\n")
