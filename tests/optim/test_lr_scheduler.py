"""ember.optim.lr_scheduler against torch's: lr (and momentum) sequences, state dicts,
composition, warnings and errors."""
import copy
import warnings

import pytest
import torch

import ember

NSTEPS = 30


class Scale:
    """A callable object: its __dict__ is saved in the scheduler's state_dict."""

    def __init__(self, f):
        self.f = f

    def __call__(self, epoch):
        return self.f ** epoch


def make_opt(lib, kind="SGD"):
    ps = [lib.nn.Parameter(lib.ones(2)) for _ in range(2)]
    groups = [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.05}]
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def S(lib, name):
    return getattr(lib.optim.lr_scheduler, name)


SCHEDULERS = {
    "LambdaLR": lambda lib, o: S(lib, "LambdaLR")(o, lambda e: 0.95 ** e),
    "LambdaLR-list": lambda lib, o: S(lib, "LambdaLR")(o, [lambda e: 1 / (e + 1), Scale(0.9)]),
    "MultiplicativeLR": lambda lib, o: S(lib, "MultiplicativeLR")(o, lambda e: 0.9),
    "StepLR": lambda lib, o: S(lib, "StepLR")(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda lib, o: S(lib, "MultiStepLR")(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ConstantLR": lambda lib, o: S(lib, "ConstantLR")(o, factor=0.25, total_iters=6),
    "LinearLR": lambda lib, o: S(lib, "LinearLR")(o, start_factor=0.1, end_factor=0.9,
                                                  total_iters=12),
    "ExponentialLR": lambda lib, o: S(lib, "ExponentialLR")(o, gamma=0.9),
    "PolynomialLR": lambda lib, o: S(lib, "PolynomialLR")(o, total_iters=17, power=2.0),
    "CosineAnnealingLR": lambda lib, o: S(lib, "CosineAnnealingLR")(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda lib, o: S(lib, "CosineAnnealingWarmRestarts")(
        o, T_0=3, T_mult=2, eta_min=0.01),
    "CosineAnnealingWarmRestarts-1": lambda lib, o: S(lib, "CosineAnnealingWarmRestarts")(
        o, T_0=5),
    "CyclicLR-triangular": lambda lib, o: S(lib, "CyclicLR")(o, 0.01, 0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda lib, o: S(lib, "CyclicLR")(
        o, [0.01, 0.02], [0.1, 0.2], step_size_up=3, step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda lib, o: S(lib, "CyclicLR")(
        o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.95),
    "CyclicLR-nomomentum": lambda lib, o: S(lib, "CyclicLR")(
        o, 0.01, 0.1, step_size_up=2, cycle_momentum=False, scale_fn=Scale(0.8),
        scale_mode="iterations"),
    "OneCycleLR": lambda lib, o: S(lib, "OneCycleLR")(o, max_lr=1.0, total_steps=NSTEPS),
    "OneCycleLR-linear3": lambda lib, o: S(lib, "OneCycleLR")(
        o, max_lr=[1.0, 0.5], epochs=3, steps_per_epoch=10, anneal_strategy="linear",
        three_phase=True, pct_start=0.25),
    "SequentialLR": lambda lib, o: S(lib, "SequentialLR")(
        o, [S(lib, "LinearLR")(o, start_factor=0.1, total_iters=5),
            S(lib, "ExponentialLR")(o, gamma=0.9), S(lib, "StepLR")(o, 3, 0.5)],
        milestones=[5, 15]),
    "ChainedScheduler": lambda lib, o: S(lib, "ChainedScheduler")(
        [S(lib, "ConstantLR")(o, factor=0.5, total_iters=4),
         S(lib, "ExponentialLR")(o, gamma=0.9)]),
    "Chained-of-cosine": lambda lib, o: S(lib, "ChainedScheduler")(
        [S(lib, "CosineAnnealingLR")(o, T_max=10), S(lib, "MultiStepLR")(o, [5, 9])], o),
}


def run(lib, name, kind="SGD", steps=NSTEPS, resume_at=None):
    opt = make_opt(lib, kind)
    sched = SCHEDULERS[name](lib, opt)
    seq = [(sched.get_last_lr(), [dict((k, v) for k, v in g.items() if k != "params")
                                  for g in opt.param_groups])]
    for k in range(steps):
        if resume_at == k:
            sd_s, sd_o = copy.deepcopy(sched.state_dict()), copy.deepcopy(opt.state_dict())
            opt = make_opt(lib, kind)
            sched = SCHEDULERS[name](lib, opt)
            sched.load_state_dict(sd_s)
            opt.load_state_dict(sd_o)
        opt.step()
        sched.step()
        seq.append((sched.get_last_lr(), [dict((k, v) for k, v in g.items() if k != "params")
                                          for g in opt.param_groups]))
    return seq


def assert_same(a, b):
    assert len(a) == len(b)
    for k, ((la, ga), (lb, gb)) in enumerate(zip(a, b)):
        assert la == pytest.approx(lb, rel=1e-12, abs=1e-15), f"step {k}"
        assert ga == gb or [pytest.approx(x) for x in ga] == gb, f"step {k}"


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch(name):
    assert_same(run(ember, name), run(torch, name))


@pytest.mark.parametrize("name", ["CyclicLR-triangular", "OneCycleLR", "OneCycleLR-linear3"])
def test_momentum_cycling_with_adam_betas(name):
    assert_same(run(ember, name, "Adam"), run(torch, name, "Adam"))


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_round_trip(name):
    mine = run(ember, name, resume_at=11)
    assert_same(mine, run(ember, name))
    assert_same(mine, run(torch, name, resume_at=11))


def test_state_dict_keys_match_torch():
    for name in ["StepLR", "CosineAnnealingLR", "LambdaLR-list", "CyclicLR-exp_range",
                 "SequentialLR", "OneCycleLR"]:
        e = SCHEDULERS[name](ember, make_opt(ember)).state_dict()
        t = SCHEDULERS[name](torch, make_opt(torch)).state_dict()
        assert set(e) == set(t), name
    sd = SCHEDULERS["LambdaLR-list"](ember, make_opt(ember)).state_dict()
    assert sd["lr_lambdas"] == [None, {"f": 0.9}]


@pytest.mark.parametrize("mode,threshold_mode", [("min", "rel"), ("min", "abs"),
                                                 ("max", "rel"), ("max", "abs")])
def test_reduce_lr_on_plateau(mode, threshold_mode):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.9, 0.91, 0.92, 0.93, 0.94, 0.5, 0.5, 0.5, 0.5,
               0.49999, 0.6, 0.7, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2]
    if mode == "max":
        metrics = [-m for m in metrics]
    out = []
    for lib in (ember, torch):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode=mode, factor=0.5, patience=2, threshold=0.01, threshold_mode=threshold_mode,
            cooldown=1, min_lr=[0.01, 0.02])
        seq = []
        for k, m in enumerate(metrics):
            if k == 9:
                sd = copy.deepcopy(sched.state_dict())
                opt = make_opt(lib)
                opt.param_groups[0]["lr"], opt.param_groups[1]["lr"] = sched.get_last_lr()
                sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt)
                sched.load_state_dict(sd)
            opt.step()
            sched.step(lib.tensor(m) if k % 2 else m)
            seq.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter))
        out.append(seq)
    assert out[0] == out[1]


def test_closed_form_step_with_epoch_warns():
    for name in ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                 "PolynomialLR", "ConstantLR", "LambdaLR"]:
        res = []
        for lib in (ember, torch):
            opt = make_opt(lib)
            sched = SCHEDULERS[name](lib, opt)
            opt.step()
            with pytest.warns(UserWarning, match="epoch parameter"):
                sched.step(9)
            res.append(sched.get_last_lr())
        assert res[0] == pytest.approx(res[1], rel=1e-12), name


def test_warm_restarts_fractional_epochs():
    res = []
    for lib in (ember, torch):
        opt = make_opt(lib)
        sched = SCHEDULERS["CosineAnnealingWarmRestarts"](lib, opt)
        opt.step()
        seq = []
        for e in [0.5, 1.25, 2.9, 3.0, 7.5, 9.1, 21.0, 2.0]:
            sched.step(e)
            seq.append((sched.get_last_lr(), sched.T_i, sched.T_cur, sched.last_epoch))
        with pytest.raises(ValueError, match="non-negative epoch"):
            sched.step(-1)
        res.append(seq)
    assert res[0] == res[1]


def test_scheduler_before_optimizer_step_warns():
    for lib in (ember, torch):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.StepLR(opt, 2)
        with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
            sched.step()
        # the right order does not warn
        opt2 = make_opt(lib)
        sched2 = lib.optim.lr_scheduler.StepLR(opt2, 2)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            opt2.step()
            sched2.step()


def test_get_lr_outside_step_warns():
    for lib in (ember, torch):
        sched = lib.optim.lr_scheduler.StepLR(make_opt(lib), 2)
        with pytest.warns(UserWarning, match="get_last_lr"):
            sched.get_lr()


def test_scheduler_errors_like_torch():
    for lib in (ember, torch):
        ls = lib.optim.lr_scheduler
        opt = make_opt(lib)
        with pytest.raises(TypeError, match="is not an Optimizer"):
            ls.StepLR(object(), 3)
        with pytest.raises(KeyError, match="initial_lr"):
            ls.StepLR(make_opt(lib), 3, last_epoch=4)
        with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
            ls.LambdaLR(opt, [lambda e: 1.0])
        with pytest.raises(ValueError, match="between 0 and 1"):
            ls.ConstantLR(opt, factor=2.0)
        with pytest.raises(ValueError, match="Starting multiplicative factor"):
            ls.LinearLR(opt, start_factor=0)
        with pytest.raises(ValueError, match="Factor should be < 1.0"):
            ls.ReduceLROnPlateau(opt, factor=1.0)
        with pytest.raises(ValueError, match="mode foo is unknown"):
            ls.ReduceLROnPlateau(opt, mode="foo")
        with pytest.raises(ValueError, match="positive integer T_0"):
            ls.CosineAnnealingWarmRestarts(opt, T_0=0)
        with pytest.raises(ValueError, match="total_steps OR"):
            ls.OneCycleLR(opt, max_lr=1.0)
        with pytest.raises(ValueError, match="pct_start"):
            ls.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=2.0)
        with pytest.raises(ValueError, match="mode is invalid"):
            ls.CyclicLR(opt, 0.1, 1.0, mode="bogus")
        with pytest.raises(ValueError, match="max_lr must have the same length"):
            ls.CyclicLR(opt, 0.1, [1.0, 2.0, 3.0])
        with pytest.raises(ValueError, match="momentum or beta1"):
            ls.OneCycleLR(lib.optim.Adagrad([lib.nn.Parameter(lib.ones(1))]), 1.0, 10)
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            o = make_opt(lib)
            s = ls.OneCycleLR(o, 1.0, total_steps=3)
            for _ in range(4):
                o.step()
                s.step()
        with pytest.raises(ValueError, match="number of milestone points"):
            ls.SequentialLR(opt, [ls.StepLR(opt, 2), ls.StepLR(opt, 3)], milestones=[])
        with pytest.raises(ValueError, match="same optimizer"):
            ls.ChainedScheduler([ls.StepLR(opt, 2), ls.StepLR(make_opt(lib), 3)])
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
            ls.ChainedScheduler([ls.ReduceLROnPlateau(opt)])


def test_tensor_lr_is_updated_in_place():
    p = ember.nn.Parameter(ember.ones(2))
    lr = ember.tensor(0.1)
    opt = ember.optim.SGD([p], lr=lr)
    sched = ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and float(lr) == pytest.approx(0.05)
    assert isinstance(sched.get_last_lr()[0], ember.Tensor)
