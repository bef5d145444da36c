"""Optimizer updates are fused operators (issue 10): one dispatch per parameter group that
modes see with its hyper-parameters, in-place writes with version bumps, torch's values."""
import numpy as np
import pytest
import torch

import ember
from ember import DispatchMode


class Recording(DispatchMode):
    def __init__(self):
        self.calls = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.calls.append((op.name, args, dict(kwargs)))
        return op(*args, **kwargs)


CASES = [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01), "_sgd_step",
     ["momentum_buffer"]),
    ("SGD", dict(lr=0.1, maximize=True), "_sgd_step", []),
    ("Adam", dict(lr=0.01, amsgrad=True, maximize=True), "_adam_step",
     ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]),
    ("AdamW", dict(lr=0.01, weight_decay=0.1), "_adam_step", ["step", "exp_avg", "exp_avg_sq"]),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True), "_rmsprop_step",
     ["step", "square_avg", "momentum_buffer", "grad_avg"]),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01), "_adagrad_step", ["step", "sum"]),
    ("Adadelta", dict(lr=0.5, weight_decay=0.1), "_adadelta_step",
     ["step", "square_avg", "acc_delta"]),
    ("Adamax", dict(lr=0.02, maximize=True), "_adamax_step", ["step", "exp_avg", "exp_inf"]),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True), "_nadam_step",
     ["step", "mu_product", "exp_avg", "exp_avg_sq"]),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.8)), "_radam_step", ["step", "exp_avg", "exp_avg_sq"]),
    ("ASGD", dict(lr=0.01, t0=2), "_asgd_step", ["step", "eta", "mu", "ax"]),
    ("Rprop", dict(lr=0.01), "_rprop_step", ["step", "prev", "step_size"]),
]
rng = np.random.default_rng(0)
SHAPES = [(3, 4), (5,), ()]
INIT = [rng.standard_normal(s) for s in SHAPES]
GRADS = [[rng.standard_normal(s) for s in SHAPES] for _ in range(4)]


def _params(lib):
    return [lib.nn.Parameter(lib.tensor(a, dtype=lib.float64)) for a in INIT]


def _groups(params, kw):
    return [{"params": params[:2]}, {"params": params[2:], "lr": kw["lr"] / 2}]


@pytest.mark.parametrize("name, kw, op_name, keys", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_one_dispatch_per_group_seen_by_modes_with_torchs_values(name, kw, op_name, keys):
    pe, pt = _params(ember), _params(torch)
    oe = getattr(ember.optim, name)(_groups(pe, kw), **kw)
    ot = getattr(torch.optim, name)(_groups(pt, kw), **kw)
    for step, grads in enumerate(GRADS):
        for p, q, g in zip(pe, pt, grads):
            p.grad, q.grad = ember.tensor(g), torch.tensor(g)
        versions = [p._version for p in pe]
        with Recording() as m:
            oe.step()
        ot.step()
        steps = [c for c in m.calls if c[0] == op_name]
        assert len(steps) == 2, [c[0] for c in m.calls]  # one per group, not per parameter
        for (_, args, params), group in zip(steps, oe.param_groups):
            n = len(group["params"])
            assert params["n"] == n and params.get("lr", group["lr"]) == group["lr"]
            assert all(a is b for a, b in zip(args[:n], group["params"]))
            assert all(a is p.grad for a, p in zip(args[n:2 * n], group["params"]))
            state = args[2 * n:]
            assert len(state) == n * len(keys)
            for k, key in enumerate(keys):
                for j, p in enumerate(group["params"]):
                    assert state[k * n + j] is oe.state[p][key]
        for p, v in zip(pe, versions):
            assert p._version == v + 1  # written once, as torch's p.add_ counts
        for p, q in zip(pe, pt):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-13,
                                       atol=1e-15)


def test_a_mode_sees_hyper_parameters_and_can_take_over_the_update():
    class SkipUpdates(DispatchMode):
        """Stands for a sharding mode: it runs the update itself (here: not at all)."""

        def __ember_dispatch__(self, op, args, kwargs):
            if op.name == "_adam_step":
                self.seen = kwargs
                return []
            return op(*args, **kwargs)
    p = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.Adam([p], lr=0.5, betas=(0.8, 0.9), eps=1e-6)
    p.grad = ember.ones(3)
    with SkipUpdates() as m:
        opt.step()
    assert {k: m.seen[k] for k in ("lr", "beta1", "beta2", "eps", "amsgrad")} == \
        {"lr": 0.5, "beta1": 0.8, "beta2": 0.9, "eps": 1e-6, "amsgrad": False}
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 1.0, 1.0])
    opt.step()
    assert not np.allclose(p.detach().numpy(), 1.0)


def test_update_invalidates_tensors_saved_for_backward():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    y = (p * p).sum()  # saves p
    opt = ember.optim.SGD([p], lr=0.1)
    p.grad = ember.ones(2)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_complex_params_update_through_real_views():
    init = np.array([1 + 2j, -0.5 + 0.25j])
    g = np.array([0.3 - 0.1j, 0.2 + 0.7j])
    pe = ember.nn.Parameter(ember.tensor(init))
    pt = torch.nn.Parameter(torch.tensor(init))
    oe, ot = ember.optim.Adam([pe], lr=0.1), torch.optim.Adam([pt], lr=0.1)
    for _ in range(3):
        pe.grad, pt.grad = ember.tensor(g), torch.tensor(g)
        oe.step()
        ot.step()
    np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-13)


def test_update_ops_are_registered_and_not_differentiable():
    from ember.ops import REGISTRY
    for name in ("_sgd_step", "_adam_step", "_rmsprop_step", "_adagrad_step", "_adadelta_step",
                 "_adamax_step", "_nadam_step", "_radam_step", "_asgd_step", "_rprop_step"):
        op = REGISTRY[name]
        assert not op.differentiable and op.n_out is None and op.shape() == ()
