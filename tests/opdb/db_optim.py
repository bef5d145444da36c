"""OpInfos of the fused optimizer steps (``_sgd_step``, ``_adam_step``, ``_rmsprop_step``,
``_adagrad_step``, ...): each record runs three steps of a ``torch.optim`` optimizer on two
parameters with fixed gradients and compares the parameters (and so the state the later
steps read) with torch's.  LBFGS (``_lbfgs_direction``) minimises a function of the
parameters through a closure instead."""
import warnings

import numpy as np

from .core import OpInfo, SampleInput, make

TOL = dict(atol=1e-6, rtol=1e-5)


def _params(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((5,), dtype, rng),
                       make((3, 4), dtype, rng), make((5,), dtype, rng)), name="two-params")


def _matrices(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((5, 2), dtype, rng),
                       make((3, 4), dtype, rng), make((5, 2), dtype, rng)), name="two-matrices")


def _steps(name, **options):
    def fn(lib, p0, p1, g0, g1):
        params = [p0.clone().requires_grad_(True), p1.clone().requires_grad_(True)]
        opt = getattr(lib.optim, name)(params, **options)
        for k in range(3):
            for p, g in zip(params, (g0, g1)):
                p.grad = g * (1 + 0.5 * k)
            opt.step()
        return [p.detach() for p in params]
    return fn


def _embedding_rows(dtype, rng):
    yield SampleInput((make((6, 3), dtype, rng), np.array([[0, 2, 2], [5, 0, 1]])),
                      name="repeated-rows")


def _sparse_adam(lib, weight, idx):
    """SparseAdam on a sparse embedding gradient: only the looked-up rows move."""
    w = weight.clone().requires_grad_(True)
    opt = lib.optim.SparseAdam([w], lr=0.05)
    for k in range(3):
        opt.zero_grad()
        (lib.nn.functional.embedding(idx, w, sparse=True) * (1 + k)).sum().backward()
        opt.step()
    return w.detach()


def _lbfgs(**options):
    """Two LBFGS steps on a smooth, non-quadratic function of the two parameters (the
    closure in the library's own ops; the second samples are its targets)."""
    def fn(lib, p0, p1, c0, c1):
        params = [p0.clone().requires_grad_(True), p1.clone().requires_grad_(True)]
        opt = lib.optim.LBFGS(params, **options)

        def closure():
            opt.zero_grad()
            x, y = params
            loss = ((x - c0) ** 2).sum() + 0.1 * (x ** 4).sum() + \
                ((y - c1) ** 2 * (1 + y ** 2)).sum()
            loss.backward()
            return loss
        with warnings.catch_warnings():  # LBFGS takes float() of the loss: both warn once
            warnings.filterwarnings("ignore", "Converting a tensor with requires_grad=True")
            for _ in range(2):
                opt.step(closure)
        return [p.detach() for p in params]
    return fn


def _rec(label, name, samples=_params, **options):
    return OpInfo(f"optim.{label}", fn=_steps(name, **options), samples=samples, grad=False,
                  **TOL)


OPS = [
    _rec("SGD", "SGD", lr=0.1),
    _rec("SGD-momentum-nesterov", "SGD", lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    _rec("Adam", "Adam", lr=0.01),
    _rec("Adam-amsgrad-maximize", "Adam", lr=0.01, amsgrad=True, maximize=True,
         weight_decay=0.1),
    _rec("AdamW", "AdamW", lr=0.01, weight_decay=0.1),
    _rec("RMSprop", "RMSprop", lr=0.01),
    _rec("RMSprop-centered-momentum", "RMSprop", lr=0.01, centered=True, momentum=0.5),
    _rec("Adagrad", "Adagrad", lr=0.1, lr_decay=0.01, weight_decay=0.1),
    _rec("Adadelta", "Adadelta", lr=0.5, weight_decay=0.1),
    _rec("Adamax", "Adamax", lr=0.01, weight_decay=0.1),
    _rec("ASGD", "ASGD", lr=0.01, t0=1.0),
    _rec("NAdam", "NAdam", lr=0.01),
    _rec("NAdam-decoupled", "NAdam", lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    _rec("RAdam", "RAdam", lr=0.01),
    _rec("Rprop", "Rprop", lr=0.01),
    _rec("Adafactor", "Adafactor", lr=0.01),
    _rec("Adafactor-vector-decay", "Adafactor", lr=0.01, beta2_decay=-0.5, weight_decay=0.1),
    OpInfo("optim.SparseAdam", fn=_sparse_adam, samples=_embedding_rows, grad=False, **TOL),
    # Muon orthogonalizes 2-D updates only
    _rec("Muon", "Muon", samples=_matrices, lr=0.02),
    _rec("Muon-no-nesterov", "Muon", samples=_matrices, lr=0.02, nesterov=False,
         adjust_lr_fn="match_rms_adamw"),
    OpInfo("optim.LBFGS", fn=_lbfgs(history_size=3, max_iter=4), samples=_params, grad=False,
           **TOL),
    OpInfo("optim.LBFGS-strong-wolfe", fn=_lbfgs(history_size=2, max_iter=4,
                                                   line_search_fn="strong_wolfe"),
           samples=_params, grad=False, **TOL),
]
