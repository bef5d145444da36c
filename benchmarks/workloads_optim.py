"""Optimizer steps over many small parameters (issue 17: "Adam/AdamW/SGD steps over many
small parameters run within 1.2x of torch's foreach"): 200 parameters of 64 to 4096
elements with fixed gradients, one ``step()`` per call, torch with ``foreach=True``."""
import numpy as np

from .workloads import workload

_SIZES = [64 * (1 + (i * 7) % 64) for i in range(200)]


def _params(lib):
    rng = np.random.default_rng(0)
    ps = []
    for n in _SIZES:
        p = lib.from_numpy(rng.standard_normal(n).astype(np.float32)).requires_grad_()
        p.grad = lib.from_numpy(rng.standard_normal(n).astype(np.float32))
        ps.append(p)
    return ps


def _stepper(lib, name, **options):
    opt = getattr(lib.optim, name)(_params(lib), foreach=True, **options)
    return opt.step


@workload("adam_step_200_params", "optim")
def adam_step_200_params(lib):
    return _stepper(lib, "Adam", lr=1e-3)


@workload("adamw_step_200_params", "optim")
def adamw_step_200_params(lib):
    return _stepper(lib, "AdamW", lr=1e-3, weight_decay=0.01)


@workload("sgd_momentum_step_200_params", "optim")
def sgd_momentum_step_200_params(lib):
    return _stepper(lib, "SGD", lr=1e-2, momentum=0.9)
