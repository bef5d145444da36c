"""Rprop (``torch.optim.Rprop``): resilient backpropagation."""
from ..ops.optim import RPROP_STEP, fused_step
from ._functional import ArrayOptimizer, check_lr, scalar, step_tensor, zeros_like

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
        lr = scalar(group["lr"])

        def init(p, st):
            st["step"] = step_tensor()
            st["prev"] = zeros_like(p)
            # a complex element is two real ones: both parts start at lr
            st["step_size"] = zeros_like(p, fill=complex(lr, lr) if p.is_complex() else lr)

        live = self._live(group, init)
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        fused_step(RPROP_STEP, [p for p, _ in live], [p._grad for p, _ in live],
                   [[st[k] for _, st in live] for k in ("step", "prev", "step_size")],
                   etaminus=etaminus, etaplus=etaplus, step_size_min=lo, step_size_max=hi,
                   maximize=group["maximize"], differentiable=group["differentiable"])
