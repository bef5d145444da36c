"""Muon (``torch.optim.Muon``): momentum, orthogonalised by a Newton-Schulz iteration.

Each 2-D parameter's (Nesterov) momentum is replaced by an approximately orthogonal
matrix of the same shape (a quintic Newton-Schulz iteration, in bfloat16 as torch
runs it: every matrix product is rounded to bfloat16), and the step is scaled for
the matrix's aspect ratio.
"""
import math

import ml_dtypes
import numpy as np

from ._functional import ArrayOptimizer, lerp_, scalar, state_arr, zeros_like

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5
_BF16 = ml_dtypes.bfloat16


def _bf16(a):
    return np.asarray(a, dtype=np.float32).astype(_BF16).astype(np.float32)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """Approximate ``U V^T`` of ``grad = U S V^T`` (a float32 array) in bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = _bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = _bf16(x / max(float(_bf16(np.sqrt(np.sum(x * x)))), eps))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        upd = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + upd @ x)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(ArrayOptimizer):
    """Implements Muon algorithm (MomentUm Orthogonalized by Newton-schulz), for the 2-D
    parameters of hidden layers; other parameters (biases, embeddings) belong to a
    standard optimizer such as AdamW.

    Args:
        lr (float, optional): learning rate (default: 1e-3).
        weight_decay (float, optional): decoupled weight decay (default: 0.1)
        momentum (float, optional): momentum factor (default: 0.95)
        nesterov (bool, optional): enables Nesterov momentum (default: True)
        ns_coefficients (tuple of three floats): the Newton-Schulz polynomial's
            coefficients (a, b, c)
        eps (float, optional): term added to the denominator for numerical stability
        ns_steps (int, optional): number of Newton-Schulz iteration steps (default: 5)
        adjust_lr_fn (str, optional): "original" (the default) or "match_rms_adamw".
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                        adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _update_group(self, group):
        def init(p, st):
            st["momentum_buffer"] = zeros_like(p._grad)

        for p in group["params"]:
            if p._grad is not None and p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
        lr = scalar(group["lr"])
        wd, mom = group["weight_decay"], group["momentum"]
        for p, st in self._live(group, init):
            x, g = p._data, p._grad._data
            if g.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            buf = state_arr(st, "momentum_buffer")
            lerp_(buf, g, 1 - mom)
            if group["nesterov"]:
                upd = g.copy()
                lerp_(upd, buf, mom)
            else:
                upd = buf
            o = _zeropower_via_newtonschulz(upd, group["ns_coefficients"], group["ns_steps"],
                                            group["eps"])
            x *= 1 - lr * wd
            x += (o * -_adjust_lr(lr, group["adjust_lr_fn"], x.shape)).astype(x.dtype)
            self._bump_all(p, st)
