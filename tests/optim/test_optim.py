"""ember.optim against torch.optim: trajectories step by step, state dicts, LBFGS, errors."""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 4), (4,), (2, 2, 3), ()]
NSTEPS = 8

OPTIONS = {
    "SGD": [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
            dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.1, weight_decay=0.1),
            dict(lr=0.1, momentum=0.5, weight_decay=0.05, maximize=True)],
    "Adam": [dict(lr=0.01), dict(lr=0.01, amsgrad=True), dict(lr=0.01, weight_decay=0.1),
             dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
             dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, maximize=True, amsgrad=True),
             dict(lr=0.01, foreach=True, capturable=False)],
    "AdamW": [dict(lr=0.01), dict(lr=0.01, amsgrad=True, weight_decay=0.2),
              dict(lr=0.01, maximize=True)],
    "Adamax": [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1),
               dict(lr=0.02, betas=(0.5, 0.9), maximize=True)],
    "NAdam": [dict(lr=0.01), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
              dict(lr=0.01, momentum_decay=0.01, maximize=True)],
    "RAdam": [dict(lr=0.01), dict(lr=0.01, betas=(0.9, 0.8)), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.01, betas=(0.9, 0.8), weight_decay=0.1, decoupled_weight_decay=True)],
    "RMSprop": [dict(lr=0.01), dict(lr=0.01, centered=True), dict(lr=0.01, momentum=0.9),
                dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1),
                dict(lr=0.01, alpha=0.9, maximize=True)],
    "Adagrad": [dict(lr=0.1), dict(lr=0.1, lr_decay=0.1), dict(lr=0.1, initial_accumulator_value=0.5),
                dict(lr=0.1, weight_decay=0.1, maximize=True)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8), dict(lr=1.0, weight_decay=0.1, maximize=True)],
}
CASES = [(name, kw) for name, kws in OPTIONS.items() for kw in kws]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CASES]

rng = np.random.default_rng(0)
INIT = [rng.standard_normal(s) for s in SHAPES]
GRADS = [[rng.standard_normal(s) for s in SHAPES] for _ in range(NSTEPS)]


def make_params(lib, dtype, init=INIT):
    dt = getattr(lib, dtype)
    return [lib.nn.Parameter(lib.tensor(np.array(a), dtype=dt)) for a in init]


def set_grads(lib, params, step, dtype):
    for i, p in enumerate(params):
        # param 1 gets no gradient on odd steps: the optimizer must skip it (no state change)
        p.grad = None if (i == 1 and step % 2 == 1) else \
            lib.tensor(GRADS[step][i], dtype=getattr(lib, dtype))


def groups(params, kw):
    # two parameter groups, the second with its own lr
    lr2 = kw.get("lr", 1.0) * 0.5
    return [{"params": params[:2]}, {"params": params[2:], "lr": lr2}]


def trajectory(lib, name, kw, dtype, steps=NSTEPS, use_groups=True):
    params = make_params(lib, dtype)
    opt = getattr(lib.optim, name)(groups(params, kw) if use_groups else params, **kw)
    out = []
    for k in range(steps):
        set_grads(lib, params, k, dtype)
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out, opt, params


def tol(dtype):
    return dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)


def assert_traj(a, b, dtype):
    for k, (sa, sb) in enumerate(zip(a, b)):
        for i, (x, y) in enumerate(zip(sa, sb)):
            np.testing.assert_allclose(x, y, **tol(dtype), err_msg=f"step {k} param {i}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_trajectory_matches_torch(name, kw, dtype):
    mine, eopt, eparams = trajectory(ember, name, kw, dtype)
    ref, topt, tparams = trajectory(torch, name, kw, dtype)
    assert_traj(mine, ref, dtype)
    # state matches too (keys, values, dtypes)
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert esd["param_groups"] == tsd["param_groups"]
    assert esd["state"].keys() == tsd["state"].keys()
    for k, st in tsd["state"].items():
        assert list(esd["state"][k].keys()) == list(st.keys())
        for key, v in st.items():
            ev = esd["state"][k][key]
            assert str(ev.dtype).split(".")[-1] == str(v.dtype).split(".")[-1], key
            np.testing.assert_allclose(ev.numpy(), v.numpy(), **tol(dtype), err_msg=key)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.01, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, centered=True)),
                                     ("Adadelta", dict(weight_decay=0.1))])
def test_complex_params_match_torch(name, kw):
    init = [rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))]
    grads = [rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2)) for _ in range(4)]
    res = []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.tensor(init[0], dtype=lib.complex128))
        opt = getattr(lib.optim, name)([p], **kw)
        for g in grads:
            p.grad = lib.tensor(g, dtype=lib.complex128)
            opt.step()
        res.append(p.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10)


def _sd_to_ember(sd):
    """A deep copy of a state dict, tensors converted to ember (a save/load round trip)."""
    def conv(v):
        if isinstance(v, (torch.Tensor, ember.Tensor)):
            return ember.tensor(v.detach().numpy().copy()) if v.dim() else \
                ember.tensor(v.item(), dtype=getattr(ember, str(v.dtype).split(".")[-1]))
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(conv(x) for x in v)
        return v
    return conv(sd)


@pytest.mark.parametrize("name,kw", [c for c in CASES if c[1] in (OPTIONS[c[0]][0],
                                                                   OPTIONS[c[0]][-1])],
                         ids=lambda x: x if isinstance(x, str) else "")
def _resumed(lib, name, kw, dtype, k):
    part, opt, params = trajectory(lib, name, kw, dtype, steps=k)
    sd = copy.deepcopy(opt.state_dict())      # what a save/load would give
    # a fresh model (current weights) and a fresh optimizer, then load
    params2 = make_params(lib, dtype, init=[p.detach().numpy() for p in params])
    opt2 = getattr(lib.optim, name)(groups(params2, kw), **kw)
    opt2.load_state_dict(sd)
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    for step in range(k, NSTEPS):
        set_grads(lib, params2, step, dtype)
        opt2.step()
        part.append([p.detach().numpy().copy() for p in params2])
    return part


@pytest.mark.parametrize("name,kw", [c for c in CASES if c[1] in (OPTIONS[c[0]][0],
                                                                   OPTIONS[c[0]][-1])],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_state_dict_round_trip(name, kw):
    dtype, k = "float64", 3
    full, _, _ = trajectory(ember, name, kw, dtype)
    part = _resumed(ember, name, kw, dtype, k)
    # loading casts state (NAdam's float32 mu_product too) to the parameter dtype, as in torch
    np.testing.assert_allclose(np.concatenate([a.ravel() for a in part[-1]]),
                               np.concatenate([a.ravel() for a in full[-1]]), rtol=1e-8)
    assert_traj(part, _resumed(torch, name, kw, dtype, k), dtype)


def test_load_torch_state_dict_into_ember():
    dtype, k = "float64", 4
    kw = dict(lr=0.01, amsgrad=True)
    ref, _, _ = trajectory(torch, "Adam", kw, dtype)
    _, topt, tparams = trajectory(torch, "Adam", kw, dtype, steps=k)
    params = make_params(ember, dtype, init=[p.detach().numpy() for p in tparams])
    opt = ember.optim.Adam(groups(params, kw), **kw)
    opt.load_state_dict(_sd_to_ember(topt.state_dict()))
    # the step counter keeps its dtype; moments follow the parameter dtype
    assert opt.state[params[0]]["step"].dtype == ember.float32
    for step in range(k, NSTEPS):
        set_grads(ember, params, step, dtype)
        opt.step()
    for p, r in zip(params, ref[-1]):
        np.testing.assert_allclose(p.detach().numpy(), r, rtol=1e-10)


def test_load_state_dict_casts_to_param_dtype_and_checks_sizes():
    p = ember.nn.Parameter(ember.zeros(3, dtype=ember.float32))
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
    sd = {"state": {0: {"momentum_buffer": ember.ones(3, dtype=ember.float64)}},
          "param_groups": [dict(opt.state_dict()["param_groups"][0])]}
    opt.load_state_dict(sd)
    assert opt.state[p]["momentum_buffer"].dtype == ember.float32
    bad = copy.deepcopy(sd)
    bad["param_groups"][0]["params"] = [0, 1]
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict(bad)
    bad["param_groups"] = bad["param_groups"] * 2
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(bad)


def _rosenbrock(lib, x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


_A = rng.standard_normal((5, 5))
_A = _A @ _A.T + np.eye(5)
_B = rng.standard_normal(5)


def _quadratic(lib, x):
    a, b = lib.tensor(_A, dtype=x.dtype), lib.tensor(_B, dtype=x.dtype)
    return 0.5 * (x * (a @ x)).sum() - (b * x).sum() + (x ** 4).sum() * 0.01


# Rosenbrock's valley amplifies rounding chaotically (torch against itself with x*x for
# x**2 drifts by 1e-7 after 3 steps, by 3e-2 after 2 steps in float32), so it is compared
# over two steps in float64 only; the well-conditioned quadratic runs in both dtypes.
@pytest.mark.parametrize("problem,x0,steps,dtype", [
    (_rosenbrock, [-1.5, 2.0], 2, "float64"),
    (_quadratic, [1.0, -1.0, 0.5, 2.0, 0.0], 4, "float64"),
    (_quadratic, [1.0, -1.0, 0.5, 2.0, 0.0], 4, "float32")],
    ids=["rosenbrock-f64", "quadratic-f64", "quadratic-f32"])
@pytest.mark.parametrize("kw", [dict(), dict(line_search_fn="strong_wolfe"),
                                dict(lr=0.5, history_size=3, max_iter=7),
                                dict(line_search_fn="strong_wolfe", history_size=2, max_iter=5)])
# LBFGS reads the closure's loss with float(), which warns once per process for a tensor
# that requires grad, in torch and in ember alike
@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
def test_lbfgs_matches_torch(kw, problem, x0, steps, dtype):
    res = []
    for lib in (ember, torch):
        x = lib.nn.Parameter(lib.tensor(x0, dtype=getattr(lib, dtype)))
        opt = lib.optim.LBFGS([x], **kw)

        def closure():
            opt.zero_grad()
            loss = problem(lib, x)
            loss.backward()
            return loss
        traj, losses = [], []
        for _ in range(steps):
            losses.append(float(opt.step(closure).detach()))
            traj.append(x.detach().numpy().copy())
        res.append((np.array(traj), losses, opt.state[x]["func_evals"], opt.state[x]["n_iter"]))
    (a, la, ea, na), (b, lb, eb, nb) = res
    # float32 runs stop at the gradient noise floor, so agree only to ~sqrt(eps)
    t = dict(rtol=1e-8, atol=1e-10) if dtype == "float64" else dict(rtol=1e-3, atol=2e-4)
    np.testing.assert_allclose(a, b, **t)
    np.testing.assert_allclose(la, lb, **t)
    if dtype == "float64":
        assert (ea, na) == (eb, nb)


def test_lbfgs_state_dict_and_single_group():
    x = ember.nn.Parameter(ember.tensor([-1.5, 2.0], dtype=ember.float64))
    opt = ember.optim.LBFGS([x], history_size=5, max_iter=3)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(ember, x)
        loss.backward()
        return loss
    opt.step(closure)
    sd = opt.state_dict()
    assert set(sd["state"][0]) >= {"d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                   "prev_flat_grad", "prev_loss", "func_evals", "n_iter"}
    with pytest.raises(ValueError, match="per-parameter options"):
        ember.optim.LBFGS([{"params": [x]}, {"params": [ember.nn.Parameter(ember.ones(1))]}])


def test_errors_like_torch():
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(2))
        q = lib.nn.Parameter(lib.ones(2))
        with pytest.raises(ValueError, match="Invalid learning rate"):
            lib.optim.SGD([p], lr=-0.1)
        with pytest.raises(ValueError, match="Invalid learning rate"):
            lib.optim.Adam([p], lr=-1)
        with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
            lib.optim.Adam([p], betas=(0.9, 1.0))
        with pytest.raises(ValueError, match="Invalid epsilon value"):
            lib.optim.RMSprop([p], eps=-1)
        with pytest.raises(ValueError, match="Nesterov momentum requires"):
            lib.optim.SGD([p], lr=0.1, nesterov=True)
        with pytest.raises(ValueError, match="more than one parameter group"):
            lib.optim.SGD([{"params": [p]}, {"params": [q, p]}], lr=0.1)
        with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
            lib.optim.SGD(p, lr=0.1)
        with pytest.raises(TypeError):
            lib.optim.SGD(5, lr=0.1)
        with pytest.raises(ValueError, match="empty parameter list"):
            lib.optim.SGD([], lr=0.1)
        with pytest.raises(TypeError, match="can only optimize Tensors"):
            lib.optim.SGD([p, 3], lr=0.1)
        with pytest.raises(ValueError, match="non-leaf"):
            lib.optim.SGD([p * 2], lr=0.1)
        with pytest.raises(TypeError, match="ordered collections"):
            lib.optim.SGD([{"params": {p}}], lr=0.1)
        with pytest.raises(ValueError, match="Invalid rho"):
            lib.optim.Adadelta([p], rho=1.5)
        with pytest.raises(UserWarning, match="duplicate parameters"):
            lib.optim.SGD([p, p], lr=0.1)


def test_param_groups_defaults_names_and_add_param_group():
    for lib in (ember, torch):
        lin = [("w", lib.nn.Parameter(lib.ones(2))), ("b", lib.nn.Parameter(lib.ones(1)))]
        opt = lib.optim.Adam(lin, lr=0.1)
        assert opt.param_groups[0]["param_names"] == ["w", "b"]
        assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
        with pytest.raises(ValueError, match="with/without names"):
            opt.add_param_group({"params": [lib.nn.Parameter(lib.ones(1))]})
    ep = [ember.nn.Parameter(ember.ones(2)) for _ in range(3)]
    tp = [torch.nn.Parameter(torch.ones(2)) for _ in range(3)]
    eo = ember.optim.SGD(ep[:1], lr=0.1, momentum=0.9)
    to = torch.optim.SGD(tp[:1], lr=0.1, momentum=0.9)
    eo.add_param_group({"params": ep[1:], "lr": 0.5})
    to.add_param_group({"params": tp[1:], "lr": 0.5})
    assert eo.state_dict()["param_groups"] == to.state_dict()["param_groups"]
    assert repr(eo) == repr(to)
    assert repr(ember.optim.Adam(ep)) == repr(torch.optim.Adam(tp))
    with pytest.raises(ValueError, match="more than one parameter group"):
        eo.add_param_group({"params": ep[:1]})


def test_zero_grad():
    p = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1)
    p.grad = ember.ones(3)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and g.tolist() == [0.0, 0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_hooks_global_and_local():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt)))
    h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", o is opt)))
    h3 = ember.optim.optimizer.register_optimizer_step_pre_hook(
        lambda o, a, k: calls.append(("gpre", type(o).__name__)))
    h4 = ember.optim.optimizer.register_optimizer_step_post_hook(
        lambda o, a, k: calls.append(("gpost", type(o).__name__)))
    p.grad = ember.ones(2)
    opt.step()
    assert calls == [("gpre", "SGD"), ("pre", True), ("post", True), ("gpost", "SGD")]
    for h in (h1, h2, h3, h4):
        h.remove()
    calls.clear()
    opt.step()
    assert calls == []
    # a pre hook can replace the arguments
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: (a, {"closure": lambda: seen.append(1) or 3.0}))
    assert opt.step() == 3.0 and seen == [1]


def test_state_dict_hooks():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.Adam([p], lr=0.1)
    log = []
    opt.register_state_dict_pre_hook(lambda o: log.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    opt.register_load_state_dict_pre_hook(lambda o, sd: log.append("lpre"))
    opt.register_load_state_dict_post_hook(lambda o: log.append("lpost"))
    sd = opt.state_dict()
    assert sd["extra"] == 1 and log == ["pre"]
    opt.load_state_dict(sd)
    assert log == ["pre", "lpre", "lpost"]


def test_step_bumps_version_like_torch():
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.Adam([p], lr=0.1)
        y = (p * p).sum()          # saves p for backward
        p.grad = lib.ones(3)
        opt.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_closure_runs_with_grad_enabled():
    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = ember.optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss
    with ember.no_grad():
        loss = opt.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)


def test_deepcopy_and_pickle_optimizer():
    import pickle
    params = make_params(ember, "float64")
    opt = ember.optim.Adam(params, lr=0.1)
    set_grads(ember, params, 0, "float64")
    opt.step()
    opt2 = copy.deepcopy(opt)
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    opt3 = pickle.loads(pickle.dumps(opt))
    assert len(opt3.state) == len(opt.state)
    h = opt2.register_step_post_hook(lambda *a: None)
    h.remove()


def test_warnings_free_training_loop():
    # an ordinary loop: model, loss, backward, step (no warnings under -W error)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = ember.nn.Parameter(ember.zeros(3, dtype=ember.float64))
        x = ember.tensor(rng.standard_normal((16, 3)))
        y = x @ ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64)
        opt = ember.optim.Adam([w], lr=0.1)
        for _ in range(200):
            opt.zero_grad()
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [1.0, -2.0, 0.5], atol=1e-2)


def test_user_defined_optimizer_subclass_gets_hooks():
    class PlainSGD(ember.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        @ember.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])
                        self.state[p]["n"] = self.state[p].get("n", 0) + 1

    p = ember.nn.Parameter(ember.tensor([1.0, 2.0]))
    opt = PlainSGD([p])
    seen = []
    opt.register_step_post_hook(lambda o, a, k: seen.append(o.state[p]["n"]))
    p.grad = ember.tensor([1.0, 1.0])
    opt.step()
    assert seen == [1]
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 1.9], rtol=1e-6)
    assert opt.state_dict()["state"] == {0: {"n": 1}}


def test_state_dict_through_ember_save_load(tmp_path):
    params = make_params(ember, "float32")
    opt = ember.optim.AdamW(groups(params, {}), lr=0.01, amsgrad=True)
    for k in range(3):
        set_grads(ember, params, k, "float32")
        opt.step()
    f = tmp_path / "opt.pt"
    ember.save(opt.state_dict(), f)
    sd = ember.load(f)
    params2 = make_params(ember, "float32", init=[p.detach().numpy() for p in params])
    opt2 = ember.optim.AdamW(groups(params2, {}), lr=0.01, amsgrad=True)
    opt2.load_state_dict(sd)
    for k in range(3, NSTEPS):
        set_grads(ember, params, k, "float32")
        set_grads(ember, params2, k, "float32")
        opt.step()
        opt2.step()
    for a, b in zip(params, params2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_setstate_fills_missing_options_and_differentiable_leaf_refused():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.Adam([p], lr=0.1)
    state = opt.__getstate__()
    del state["param_groups"][0]["amsgrad"]
    opt.__setstate__(state)
    assert opt.param_groups[0]["amsgrad"] is False
    # the differentiable step writes the param in place under grad mode, as torch's does:
    # a leaf that requires grad is refused (tests/optim/test_differentiable.py: the rest)
    opt = ember.optim.SGD([p], lr=0.1, differentiable=True)
    p.grad = ember.ones(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        opt.step()
