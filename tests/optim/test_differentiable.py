"""Optimizers with ``differentiable=True`` against torch (float64).

The step is recorded by autograd: the gradient of a loss after the step(s) with respect to
the initial parameters, the gradients, a tensor learning rate and the optimizer state must
equal torch's.  Two programs: torch's own ``_diff_fn`` (one step from seeded state, the
gradient an input) and an unrolled meta-learning loop (``k`` steps, each gradient computed
with ``create_graph=True``).  Where torch's own in-place step cannot be differentiated
(its saved tensors are overwritten by the next step), ember is checked against finite
differences instead.  Errors: torch's, where torch refuses.
"""
import numpy as np
import pytest
import torch

import ember

# torch 2.13's optimizers with a ``differentiable`` option, and their state keys
STATE = {
    "SGD": ("momentum_buffer",), "Adam": ("exp_avg", "exp_avg_sq"),
    "AdamW": ("exp_avg", "exp_avg_sq"), "Adagrad": ("sum",),
    "Adadelta": ("square_avg", "acc_delta"), "Adamax": ("exp_avg", "exp_inf"),
    "ASGD": ("eta", "mu", "ax"), "NAdam": ("mu_product", "exp_avg", "exp_avg_sq"),
    "RAdam": ("exp_avg", "exp_avg_sq"), "RMSprop": ("square_avg", "momentum_buffer", "grad_avg"),
    "Rprop": ("prev", "step_size"),
}
# torch's step takes the lr as a Python number only (``addcdiv_(value=lr)``): lr stays a float
FLOAT_LR = {"Adagrad", "Adadelta", "Adamax", "RMSprop", "Rprop"}

OPTIONS = [
    ("SGD", {}), ("SGD", dict(momentum=0.9)), ("SGD", dict(momentum=0.9, nesterov=True)),
    ("SGD", dict(momentum=0.9, dampening=0.3, weight_decay=0.1, maximize=True)),
    ("Adam", {}), ("Adam", dict(amsgrad=True, weight_decay=0.1)), ("Adam", dict(maximize=True)),
    ("Adam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(amsgrad=True)),
    ("Adagrad", {}), ("Adagrad", dict(lr_decay=0.1, weight_decay=0.1, maximize=True)),
    ("Adadelta", {}), ("Adadelta", dict(weight_decay=0.1, maximize=True)),
    ("Adamax", {}), ("Adamax", dict(weight_decay=0.1, maximize=True)),
    ("ASGD", {}), ("ASGD", dict(t0=1, weight_decay=0.1)),
    ("NAdam", {}), ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", {}), ("RAdam", dict(weight_decay=0.1)),
    ("RMSprop", {}), ("RMSprop", dict(momentum=0.9, centered=True, weight_decay=0.1)),
    ("Rprop", {}), ("Rprop", dict(maximize=True)),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in OPTIONS]


@pytest.fixture(autouse=True)
def _float64():
    prev_t, prev_e = torch.get_default_dtype(), ember.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    ember.set_default_dtype(ember.float64)
    yield
    torch.set_default_dtype(prev_t)
    ember.set_default_dtype(prev_e)


def _lr(lib, name, lr):
    return lr if name in FLOAT_LR else lib.tensor(lr, requires_grad=True)


def _seeded_inputs(lib, name, kw):
    rng = np.random.RandomState(1)
    x0 = lib.tensor(rng.randn(6), requires_grad=True)
    grad = lib.tensor(rng.randn(6), requires_grad=True)
    keys = STATE[name] + (("max_exp_avg_sq",) if kw.get("amsgrad") else ())
    seeds = [lib.tensor(np.abs(rng.randn(*(() if k in ("eta", "mu", "mu_product") else (6,))))
                        + 0.1, requires_grad=True) for k in keys]
    return [x0, grad] + seeds


def _seeded_step(lib, name, kw, x0, grad, *seeds, lr=None):
    """torch's ``_diff_fn``: one step of a clone of ``x0`` with gradient ``grad`` from state
    seeded with clones of ``seeds``; returns the new param and the state requiring grad."""
    keys = STATE[name] + (("max_exp_avg_sq",) if kw.get("amsgrad") else ())
    p = x0.clone()
    p.grad = grad
    opt = getattr(lib.optim, name)([p], lr=0.05 if lr is None else lr, differentiable=True,
                                   **kw)
    opt.state[p]["step"] = lib.tensor(10.0)
    opt.state[p].update({k: v.clone() for k, v in zip(keys, seeds)})
    opt.step()
    return (p,) + tuple(v for v in opt.state[p].values() if v.requires_grad)


def _seeded_gradients(lib, name, kw):
    """The new param and state, and the gradient of their weighted sum w.r.t. every input."""
    ins = _seeded_inputs(lib, name, kw)
    lr = _lr(lib, name, 0.05)
    outs = _seeded_step(lib, name, kw, *ins, lr=lr)
    rng = np.random.RandomState(2)
    total = sum((o * lib.tensor(rng.randn(*o.shape))).sum() for o in outs)
    ins = ins + ([lr] if isinstance(lr, lib.Tensor) else [])
    grads = lib.autograd.grad(total, ins, allow_unused=True)
    return [o.detach().numpy() for o in outs] + \
        [np.zeros(tuple(t.shape)) if g is None else g.numpy() for g, t in zip(grads, ins)]


def _unrolled(lib, name, kw, k, x0=None, lr=None, seed_buffer=False):
    """``k`` steps of a meta-learning loop: each gradient from ``create_graph=True``; the
    loss of the final param; its gradient w.r.t. the initial param and lr (``x0`` given:
    the loss alone)."""
    rng = np.random.RandomState(0)
    w = lib.tensor(rng.randn(5))
    inputs = x0 is None
    if inputs:
        x0 = lib.tensor(rng.randn(5), requires_grad=True)
        lr = _lr(lib, name, 0.05)
    p = x0.clone()
    opt = getattr(lib.optim, name)([p], lr=lr, differentiable=True, **kw)
    if seed_buffer:  # a momentum buffer that is not the detached first gradient
        opt.state[p]["momentum_buffer"] = lib.zeros(5)
    for _ in range(k):
        q = p.clone()  # the loss saves q, not p (p is written in place by the step)
        g, = lib.autograd.grad((lib.sin(q * w) * w).sum() + (q * q).sum(), p, create_graph=True)
        p.grad = g
        opt.step()
    final = (p.clone() ** 3).sum()
    if not inputs:
        return final
    ins = [x0] + ([lr] if isinstance(lr, lib.Tensor) else [])
    grads = lib.autograd.grad(final, ins, allow_unused=True)
    state = [v.detach().numpy() for v in opt.state[p].values() if isinstance(v, lib.Tensor)]
    return [p.detach().numpy()] + \
        [np.zeros(tuple(t.shape)) if g is None else g.numpy() for g, t in zip(grads, ins)] + state


def _torch_or_none(fn, *args):
    try:
        return fn(torch, *args)
    except RuntimeError as e:
        # torch's in-place step overwrote a tensor its own backward saved (e.g. the momentum
        # buffer read by the param update); ember's step keeps what its backward needs
        assert "modified by an inplace operation" in str(e)
        return None


def _close(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name,kw", OPTIONS, ids=IDS)
def test_seeded_step_gradients_match_torch(name, kw):
    want = _torch_or_none(_seeded_gradients, name, kw)
    if want is not None:
        _close(want, _seeded_gradients(ember, name, kw))
        return
    # torch cannot differentiate its own step here (ASGD): ember against finite differences,
    # eta held fixed (torch reads it as a Python number: it carries no derivative)
    ins = _seeded_inputs(ember, name, kw)
    fixed = STATE[name].index("eta") + 2 if name == "ASGD" else None

    def step(*a):
        a = list(a)
        if fixed is not None:
            a.insert(fixed, ins[fixed].detach())
        return _seeded_step(ember, name, kw, *a)

    free = tuple(t for i, t in enumerate(ins) if i != fixed)
    assert ember.autograd.gradcheck(step, free, atol=1e-6)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("name,kw", OPTIONS, ids=IDS)
def test_unrolled_steps_match_torch(name, kw, k):
    want = _torch_or_none(_unrolled, name, kw, k)
    if want is not None:
        _close(want, _unrolled(ember, name, kw, k))
        return
    # torch cannot differentiate this loop: ember against finite differences (torch's
    # first momentum buffer is a detached copy of the gradient, whose derivative finite
    # differences see: the buffer is seeded instead)
    rng = np.random.RandomState(0)
    x0 = ember.tensor(rng.randn(7)[2:], requires_grad=True)
    lr = _lr(ember, name, 0.05)
    ins = (x0, lr) if isinstance(lr, ember.Tensor) else (x0,)
    assert ember.autograd.gradcheck(
        lambda x, r=lr: _unrolled(ember, name, kw, k, x, r, seed_buffer=name == "SGD"),
        ins, atol=1e-6)


def test_sgd_first_momentum_buffer_is_detached_like_torch():
    """torch's first momentum buffer is ``grad.detach().clone()``: the first step's update
    carries no derivative to the gradient (only to lr)."""
    for lib in (torch, ember):
        g = lib.tensor([1.0, -2.0], requires_grad=True)
        lr = lib.tensor(0.1, requires_grad=True)
        p = lib.zeros(2, requires_grad=True).clone()
        p.grad = g
        lib.optim.SGD([p], lr=lr, momentum=0.9, differentiable=True).step()
        dg, dlr = lib.autograd.grad(p.sum(), [g, lr], allow_unused=True)
        assert dg is None or float(abs(dg).sum()) == 0.0
        assert float(dlr) == pytest.approx(1.0)


@pytest.mark.parametrize("name", sorted(STATE))
def test_leaf_param_requiring_grad_raises_torch_inplace_error(name):
    msgs = []
    for lib in (torch, ember):
        p = lib.randn(3, requires_grad=True)
        p.grad = lib.randn(3)
        opt = getattr(lib.optim, name)([p], lr=0.1, differentiable=True)
        with pytest.raises(RuntimeError) as e:
            opt.step()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "leaf Variable that requires grad" in msgs[1]


@pytest.mark.parametrize("name", sorted(set(STATE) - {"SGD"}))
def test_foreach_with_differentiable_raises_like_torch(name):
    for lib in (torch, ember):
        p = lib.randn(3, requires_grad=True).clone()
        p.grad = lib.randn(3)
        opt = getattr(lib.optim, name)([p], lr=0.1, differentiable=True, foreach=True)
        with pytest.raises(AssertionError, match="_foreach ops don't support autograd"):
            opt.step()


def test_sgd_foreach_differentiable_runs_like_torch():
    out = []
    for lib in (torch, ember):
        x0 = lib.tensor([1.0, 2.0], requires_grad=True)
        p = x0.clone()
        p.grad = lib.tensor([0.5, -1.0], requires_grad=True)
        lib.optim.SGD([p], lr=0.1, differentiable=True, foreach=True).step()
        out.append([t.numpy() for t in lib.autograd.grad((p * p).sum(), [x0, p.grad])])
    _close(*out)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_with_differentiable_refused_like_torch(name):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
            getattr(lib.optim, name)([lib.randn(2, requires_grad=True)], lr=0.1,
                                     differentiable=True, fused=True)


def test_non_leaf_refused_without_differentiable():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
            lib.optim.Adam([lib.randn(2, requires_grad=True).clone()])


def test_step_records_under_no_grad_and_restores_mode():
    """torch's differentiable step turns grad mode on for its duration."""
    x0 = ember.tensor([1.0, 2.0], requires_grad=True)
    p = x0.clone()
    p.grad = ember.tensor([0.5, -1.0])
    opt = ember.optim.Adam([p], lr=0.1, differentiable=True)
    with ember.no_grad():
        opt.step()
        assert not ember.is_grad_enabled()
    assert p.grad_fn is not None
    dx, = ember.autograd.grad(p.sum(), [x0])
    np.testing.assert_allclose(dx.numpy(), [1.0, 1.0])


def test_complex_param_matches_torch():
    out = []
    for lib in (torch, ember):
        x0 = lib.tensor([1 + 2j, -0.5 + 0.25j], dtype=lib.complex128, requires_grad=True)
        p = x0.clone()
        p.grad = lib.tensor([0.5 - 1j, 2 + 0.5j], dtype=lib.complex128)
        opt = lib.optim.Adam([p], lr=lib.tensor(0.1, requires_grad=True), differentiable=True)
        opt.step()
        lr = opt.param_groups[0]["lr"]
        loss = (p.abs() ** 2).sum()
        out.append([p.detach().numpy()] + [g.numpy() for g in lib.autograd.grad(loss, [x0, lr])])
    _close(*out)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_tensor_betas_and_lr_gradients_match_torch(name):
    """Learned betas and lr through two steps (torch's differentiable path takes tensors)."""
    out = []
    for lib in (torch, ember):
        rng = np.random.RandomState(0)
        x0 = lib.tensor(rng.randn(4), requires_grad=True)
        g = lib.tensor(rng.randn(4), requires_grad=True)
        b1, b2, lr = (lib.tensor(v, requires_grad=True) for v in (0.8, 0.95, 0.1))
        p = x0.clone()
        p.grad = g
        opt = getattr(lib.optim, name)([p], lr=lr, betas=(b1, b2), differentiable=True)
        opt.step()
        p.grad = g * 2
        opt.step()
        loss = (p.clone() ** 2).sum()
        out.append([p.detach().numpy()] +
                   [t.numpy() for t in lib.autograd.grad(loss, [x0, g, b1, b2, lr])])
    _close(*out)


@pytest.mark.parametrize("name,kw", [("SGD", {}), ("SGD", dict(maximize=True)),
                                     ("Adam", {}), ("Adam", dict(maximize=True)),
                                     ("Adam", dict(decoupled_weight_decay=True))])
def test_tensor_weight_decay_matches_torch(name, kw):
    """A learned weight_decay: torch adds it into ``p.grad`` in place (not under maximize,
    nor decoupled), and so does ember; gradients w.r.t. x0, the gradient and the decay."""
    out = []
    for lib in (torch, ember):
        rng = np.random.RandomState(0)
        x0 = lib.tensor(rng.randn(4), requires_grad=True)
        g0 = lib.tensor(rng.randn(4), requires_grad=True)
        wd = lib.tensor(0.1, requires_grad=True)
        p = x0.clone()
        p.grad = g0.clone()
        getattr(lib.optim, name)([p], lr=0.1, weight_decay=wd, differentiable=True, **kw).step()
        loss = (p.clone() ** 2).sum()
        out.append([p.detach().numpy(), p.grad.detach().numpy()] +
                   [t.numpy() for t in lib.autograd.grad(loss, [x0, g0, wd])])
    _close(*out)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop"])
def test_several_params_and_groups_match_torch(name):
    out = []
    for lib in (torch, ember):
        rng = np.random.RandomState(3)
        xs = [lib.tensor(rng.randn(*s), requires_grad=True) for s in ((2, 3), (4,), ())]
        ps = [x.clone() for x in xs]
        lr = lib.tensor(0.05, requires_grad=True) if name != "RMSprop" else 0.05
        opt = getattr(lib.optim, name)([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.2}],
                                       lr=lr, differentiable=True)
        for _ in range(2):
            qs = [p.clone() for p in ps]
            loss = sum((lib.cos(q) * q).sum() for q in qs)
            for p, g in zip(ps, lib.autograd.grad(loss, ps, create_graph=True)):
                p.grad = g
            opt.step()
        final = sum((p.clone() ** 2).sum() for p in ps)
        ins = xs + ([lr] if isinstance(lr, lib.Tensor) else [])
        out.append([p.detach().numpy() for p in ps] +
                   [g.numpy() for g in lib.autograd.grad(final, ins)])
    _close(*out)


def test_use_grad_for_differentiable_decorator_like_torch():
    """A custom optimizer written after torch's own (``_use_grad_for_differentiable`` on its
    step, ``_get_value`` for the step count) records its update only when differentiable."""
    from torch.optim.optimizer import _get_value as t_get, _use_grad_for_differentiable as t_use

    from ember.optim.optimizer import _get_value as e_get, _use_grad_for_differentiable as e_use

    def make(lib, use, get):
        class Plain(lib.optim.Optimizer):
            def __init__(self, params, lr, differentiable):
                super().__init__(params, dict(lr=lr, differentiable=differentiable))

            @use
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        st = self.state[p]
                        st["step"] = st.get("step", lib.tensor(0.0)) + 1
                        p.mul_(1 - 0.01 * get(st["step"])).add_(p.grad * -group["lr"])
                return lib.is_grad_enabled()
        return Plain

    out = []
    for lib, use, get in ((torch, t_use, t_get), (ember, e_use, e_get)):
        x0 = lib.tensor([1.0, -2.0], requires_grad=True)
        lr = lib.tensor(0.1, requires_grad=True)
        p = x0.clone()
        p.grad = lib.tensor([0.5, 0.25])
        opt = make(lib, use, get)([p], lr, True)
        with lib.no_grad():
            assert opt.step() is True
        assert lib.is_grad_enabled()
        out.append([t.numpy() for t in lib.autograd.grad((p * p).sum(), [x0, lr])])
        q = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
        q.grad = lib.tensor([1.0, 1.0])
        assert make(lib, use, get)([q], 0.1, False).step() is False  # no leaf error: no grad
        np.testing.assert_allclose(q.detach().numpy(), [0.89, 1.88])
    _close(*out)


@pytest.mark.parametrize("kw", [dict(foreach=False), dict(foreach=True),
                                dict(differentiable=True)], ids=["single", "foreach", "diff"])
@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adadelta", "Adamax", "ASGD", "NAdam",
                                  "RAdam", "RMSprop", "Rprop"])
def test_capturable_refused_off_cuda_like_torch(name, kw):
    """torch's step refuses capturable=True for CPU tensors (after creating the state)."""
    msgs, keys = [], []
    for lib in (torch, ember):
        p = lib.randn(3, requires_grad=True)
        p = p.clone() if kw.get("differentiable") else p.detach().requires_grad_()
        p.grad = lib.randn(3)
        opt = getattr(lib.optim, name)([p], lr=0.1, capturable=True, **kw)
        with pytest.raises(AssertionError) as e:
            opt.step()
        msgs.append(str(e.value))
        keys.append(sorted(opt.state[p]))
    assert msgs[0] == msgs[1]
    assert keys[0] == keys[1] and keys[1]


@pytest.mark.parametrize("name", ["Adam", "AdamW", "NAdam"])
def test_step_requiring_grad_refused_like_torch(name):
    """torch's Adam(W) refuse a step counter that requires grad; the others take it."""
    outcomes = []
    for lib in (torch, ember):
        p = lib.randn(3, requires_grad=True).clone()
        p.grad = lib.randn(3)
        opt = getattr(lib.optim, name)([p], differentiable=True)
        opt.step()
        opt.state[p]["step"] = lib.tensor(1.0, requires_grad=True)
        try:
            opt.step()
            outcomes.append(float(opt.state[p]["step"]))
        except RuntimeError as e:
            outcomes.append(str(e))
    assert outcomes[0] == outcomes[1]


# hyper-parameters given as tensors that require grad: torch's step passes some of them (or a
# number computed from them) to a Number argument (``addcdiv_(value=-lr)``), a TypeError
B = (0.9, 0.99)
NUMBER_ARGS = [
    ("Adagrad", dict(lr=0.1), ["lr"]), ("Adagrad", dict(lr_decay=0.1), ["lr_decay"]),
    ("Adagrad", dict(lr=0.1, weight_decay=0.1), ["lr", "weight_decay"]),
    ("Adagrad", dict(eps=1e-10), ["eps"]),
    ("Adadelta", dict(lr=0.1), ["lr"]), ("Adadelta", dict(lr=0.1, rho=0.9), ["lr", "rho"]),
    ("Adadelta", dict(rho=0.9, weight_decay=0.1), ["rho", "weight_decay"]),
    ("Adamax", dict(lr=0.1), ["lr"]), ("Adamax", dict(betas=B), [("betas", 0)]),
    ("Adamax", dict(betas=B), [("betas", 1)]), ("Adamax", dict(weight_decay=0.1), ["weight_decay"]),
    ("RMSprop", dict(lr=0.1), ["lr"]), ("RMSprop", dict(lr=0.1, momentum=0.9), ["lr"]),
    ("RMSprop", dict(lr=0.1, alpha=0.9), ["lr", "alpha"]),
    ("RMSprop", dict(lr=0.1, momentum=0.9, centered=True), ["momentum"]),
    ("RMSprop", dict(alpha=0.9, weight_decay=0.1), ["alpha", "weight_decay"]),
    ("Rprop", dict(lr=0.1), ["lr"]), ("Rprop", dict(step_sizes=(1e-6, 50)), [("step_sizes", 0)]),
    ("Rprop", dict(step_sizes=(1e-6, 50.0)), [("step_sizes", 1)]),
    ("Rprop", dict(step_sizes=(1e-6, 50.0)), [("step_sizes", 0), ("step_sizes", 1)]),
    ("NAdam", dict(betas=B), [("betas", 0)]), ("NAdam", dict(betas=B), [("betas", 1)]),
    ("NAdam", dict(weight_decay=0.1), ["weight_decay"]),
    ("NAdam", dict(weight_decay=0.1, decoupled_weight_decay=True), ["weight_decay"]),
    ("RAdam", dict(lr=0.1), ["lr"]), ("RAdam", dict(betas=B), [("betas", 1)]),
    ("RAdam", dict(weight_decay=0.1), ["weight_decay"]),
    ("RAdam", dict(weight_decay=0.1, decoupled_weight_decay=True), ["weight_decay"]),
    ("ASGD", dict(weight_decay=0.1), ["weight_decay"]), ("ASGD", dict(lambd=0.1), ["lambd"]),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), ["momentum"]),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), ["lr", "weight_decay"]),
    ("SGD", dict(momentum=0.9), ["momentum"]),
    ("Adam", dict(lr=0.1, betas=B, weight_decay=0.1), ["lr", "betas", "weight_decay"]),
    ("Adagrad", dict(initial_accumulator_value=0.1), ["initial_accumulator_value"]),
]


def _number_arg_step(lib, name, kw, keys, differentiable):
    kw = dict(kw, weight_decay=kw.get("weight_decay", 0.1)) if "weight_decay" in keys else \
        dict(kw)
    for k in keys:
        key, i = k if isinstance(k, tuple) else (k, None)
        if i is None and isinstance(kw[key], tuple):
            kw[key] = tuple(lib.tensor(v, requires_grad=True) for v in kw[key])
        elif i is None:
            kw[key] = lib.tensor(kw[key], requires_grad=True)
        else:
            kw[key] = tuple(lib.tensor(v, requires_grad=True) if j == i else v
                            for j, v in enumerate(kw[key]))
    x0 = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    p = x0.clone() if differentiable else lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    try:
        opt = getattr(lib.optim, name)([p], differentiable=differentiable, **kw)
        for g in ([0.5, -1.0, 2.0], [0.3, 1.0, -2.0]):
            p.grad = lib.tensor(g)
            opt.step()
    except TypeError as e:
        return str(e)
    return [p.detach().numpy()]


@pytest.mark.parametrize("differentiable", [True, False])
@pytest.mark.parametrize("name,kw,keys", NUMBER_ARGS,
                         ids=[f"{n}-{'-'.join(map(str, k))}" for n, _, k in NUMBER_ARGS])
def test_tensor_hyperparameter_in_number_argument_like_torch(name, kw, keys, differentiable):
    """torch takes a 0-dim tensor for a Number argument only when it does not require grad:
    the same TypeError, or the same step."""
    want = _number_arg_step(torch, name, kw, keys, differentiable)
    got = _number_arg_step(ember, name, kw, keys, differentiable)
    if isinstance(want, str):
        assert got == want
    else:
        _close(want, got)


HYPER = {
    "SGD": dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.1),
    "Adam": dict(lr=0.1, betas=B, weight_decay=0.1, eps=1e-8, amsgrad=True),
    "AdamW": dict(lr=0.1, betas=B, weight_decay=0.1, eps=1e-8),
    "NAdam": dict(lr=0.1, betas=B, weight_decay=0.1, eps=1e-8, momentum_decay=4e-3),
    "RAdam": dict(lr=0.1, betas=B, weight_decay=0.1, eps=1e-8, decoupled_weight_decay=True),
    "ASGD": dict(lr=0.1, lambd=0.1, alpha=0.75, t0=1.0, weight_decay=0.1),
    "Adagrad": dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, eps=1e-10,
                    initial_accumulator_value=0.1),
    "Adadelta": dict(lr=0.1, rho=0.9, eps=1e-6, weight_decay=0.1),
    "Adamax": dict(lr=0.1, betas=B, eps=1e-8, weight_decay=0.1),
    "RMSprop": dict(lr=0.1, alpha=0.9, eps=1e-8, weight_decay=0.1, momentum=0.9, centered=True),
    "Rprop": dict(lr=0.1, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)),
}


@pytest.mark.parametrize("name", sorted(HYPER))
def test_every_hyperparameter_as_tensor_steps_like_torch(name):
    """Without ``differentiable``, torch takes any hyper-parameter as a 0-dim tensor (ember's
    kernels were handed the tensor itself: NumPy's TypeError)."""
    for key in HYPER[name]:
        if key in ("amsgrad", "centered", "decoupled_weight_decay"):
            continue
        steps = []
        for lib in (torch, ember):
            kw = dict(HYPER[name])
            v = kw[key]
            kw[key] = tuple(lib.tensor(b) for b in v) if isinstance(v, tuple) else lib.tensor(v)
            p = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
            opt = getattr(lib.optim, name)([p], **kw)
            for g in ([0.5, -1.0, 2.0], [0.3, 1.0, -2.0]):
                p.grad = lib.tensor(g)
                opt.step()
            steps.append([p.detach().numpy()])
        _close(*steps)
