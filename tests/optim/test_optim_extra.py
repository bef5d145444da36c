"""ASGD, Rprop, Adafactor, SparseAdam and swa_utils against torch: parameters and state after
N steps with the same gradients, state_dict round trips, argument errors."""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 4), (4,), (2, 2, 3), ()]
NSTEPS = 7
rng = np.random.default_rng(5)
INIT = [rng.standard_normal(s) for s in SHAPES]
GRADS = [[rng.standard_normal(s) for s in SHAPES] for _ in range(NSTEPS)]

OPTIONS = {
    "ASGD": [dict(lr=0.05), dict(lr=0.05, t0=2), dict(lr=0.1, lambd=0.01, alpha=0.5, t0=0,
             weight_decay=0.1), dict(lr=0.05, t0=3, maximize=True)],
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5)), dict(lr=0.1, step_sizes=(0.01, 0.2)),
              dict(lr=0.02, maximize=True)],
    "Adafactor": [dict(), dict(lr=0.05, weight_decay=0.1), dict(lr=0.02, beta2_decay=-0.5,
                  eps=(1e-20, 1e-2), d=1.5), dict(lr=0.01, maximize=True)],
}
CASES = [(n, kw) for n, kws in OPTIONS.items() for kw in kws]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CASES]


def make_params(lib, dtype, init=INIT):
    return [lib.nn.Parameter(lib.tensor(np.array(a), dtype=getattr(lib, dtype))) for a in init]


def set_grads(lib, params, step, dtype, grads=GRADS):
    for i, p in enumerate(params):
        # param 1 has no gradient on odd steps: it must be skipped, state untouched
        p.grad = None if (i == 1 and step % 2 == 1) else \
            lib.tensor(grads[step][i], dtype=getattr(lib, dtype))


def trajectory(lib, name, kw, dtype, steps=NSTEPS, opt_cls=None):
    params = make_params(lib, dtype)
    groups = [{"params": params[:2]}, {"params": params[2:], "lr": kw.get("lr", 0.01) * 0.5}]
    opt = (opt_cls or getattr(lib.optim, name))(groups, **kw)
    out = []
    for k in range(steps):
        set_grads(lib, params, k, dtype)
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out, opt, params


def tol(dtype):
    return dict(rtol=1e-9, atol=1e-11) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)


def assert_same(a, b, dtype):
    for k, (sa, sb) in enumerate(zip(a, b)):
        for i, (x, y) in enumerate(zip(sa, sb)):
            np.testing.assert_allclose(x, y, err_msg=f"step {k} param {i}", **tol(dtype))


def state_arrays(opt, lib):
    out = []
    for g in opt.param_groups:
        for p in g["params"]:
            st = opt.state[p]
            out.append({k: (v.detach().numpy().copy() if isinstance(v, lib.Tensor) else v)
                        for k, v in st.items()})
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_trajectory_and_state_match_torch(name, kw, dtype):
    te, oe, _ = trajectory(ember, name, kw, dtype)
    tt, ot, _ = trajectory(torch, name, kw, dtype)
    assert_same(te, tt, dtype)
    se, st = state_arrays(oe, ember), state_arrays(ot, torch)
    for a, b in zip(se, st):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_allclose(np.asarray(a[k], dtype=np.float64),
                                       np.asarray(b[k], dtype=np.float64), err_msg=k,
                                       **tol(dtype))
            if isinstance(b[k], np.ndarray):
                assert a[k].dtype == b[k].dtype, k


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_round_trip(name, kw):
    # float32: loading casts floating state to the parameter's dtype (torch does too), which
    # would change ASGD's float32 eta/mu under float64 parameters
    full, _, _ = trajectory(ember, name, kw, "float32")
    part, opt, params = trajectory(ember, name, kw, "float32", steps=3)
    sd = copy.deepcopy(opt.state_dict())
    fresh = [ember.nn.Parameter(p.detach().clone()) for p in params]
    groups = [{"params": fresh[:2]}, {"params": fresh[2:]}]
    opt2 = getattr(ember.optim, name)(groups, **kw)
    opt2.load_state_dict(sd)
    for k in range(3, NSTEPS):
        set_grads(ember, fresh, k, "float32")
        opt2.step()
    for x, y in zip(fresh, full[-1]):
        np.testing.assert_array_equal(x.detach().numpy(), y)
    # the state dict has torch's layout (same keys per parameter, same group options)
    _, ot, _ = trajectory(torch, name, kw, "float64", steps=3)
    sdt = ot.state_dict()
    assert sd["state"].keys() == sdt["state"].keys()
    for i in sd["state"]:
        assert sd["state"][i].keys() == sdt["state"][i].keys()
    for ge, gt in zip(sd["param_groups"], sdt["param_groups"]):
        assert ge.keys() == gt.keys() and ge["params"] == gt["params"]


@pytest.mark.parametrize("name,kw", [("ASGD", dict(lr=0.05, t0=1)), ("Rprop", dict(lr=0.05))])
def test_complex_params_match_torch(name, kw):
    r = np.random.default_rng(9)
    init = r.standard_normal((3, 2)) + 1j * r.standard_normal((3, 2))
    grads = [r.standard_normal((3, 2)) + 1j * r.standard_normal((3, 2)) for _ in range(5)]

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(init, dtype=lib.complex128))
        opt = getattr(lib.optim, name)([p], **kw)
        for g in grads:
            p.grad = lib.tensor(g, dtype=lib.complex128)
            opt.step()
        return p.detach().numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-10, atol=1e-12)


def test_adafactor_rejects_complex():
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.zeros(2, dtype=lib.complex64))
        p.grad = lib.ones(2, dtype=lib.complex64)
        with pytest.raises(RuntimeError, match="Adafactor does not support complex"):
            lib.optim.Adafactor([p]).step()


def test_adafactor_factored_state_shapes():
    p = ember.nn.Parameter(ember.zeros(2, 3, 4))
    p.grad = ember.ones(2, 3, 4)
    opt = ember.optim.Adafactor([p])
    opt.step()
    st = opt.state[p]
    assert st["row_var"].shape == (2, 3, 1) and st["col_var"].shape == (2, 1, 4)
    assert "variance" not in st


@pytest.mark.parametrize("kw", [dict(lr=0.01), dict(lr=0.05, betas=(0.5, 0.9), eps=1e-6),
                                dict(lr=0.01, maximize=True)])
def test_sparse_adam_masked_update_matches_torch_sparse_grads(kw):
    r = np.random.default_rng(3)
    init = r.standard_normal((6, 3))
    grads = []
    for _ in range(6):
        g = np.zeros((6, 3))
        rows = r.choice(6, size=2, replace=False)
        g[rows] = r.standard_normal((2, 3))  # the rows an embedding lookup touched
        grads.append(g)

    pe = ember.nn.Parameter(ember.tensor(init))
    pt = torch.nn.Parameter(torch.tensor(init))
    oe, ot = ember.optim.SparseAdam([pe], **kw), torch.optim.SparseAdam([pt], **kw)
    for g in grads:
        pe.grad = ember.tensor(g)
        pt.grad = torch.tensor(g).to_sparse()
        oe.step()
        ot.step()
        np.testing.assert_allclose(pe.detach().numpy(), pt.detach().numpy(), rtol=1e-12,
                                   atol=1e-14)
    assert oe.state[pe]["step"] == ot.state[pt]["step"] == 6
    np.testing.assert_allclose(oe.state[pe]["exp_avg_sq"].numpy(),
                               ot.state[pt]["exp_avg_sq"].numpy(), rtol=1e-12)
    # torch needs sparse gradients; ember has no sparse layout and takes dense ones
    pt.grad = torch.tensor(grads[0])
    with pytest.raises(RuntimeError, match="does not support dense gradients"):
        ot.step()


def test_sparse_adam_errors_match_torch():
    for kw in (dict(lr=0.0), dict(eps=0.0), dict(betas=(1.0, 0.9)), dict(betas=(0.9, -0.1))):
        with pytest.raises(ValueError) as te:
            torch.optim.SparseAdam([torch.nn.Parameter(torch.zeros(2))], **kw)
        with pytest.raises(ValueError) as ee:
            ember.optim.SparseAdam([ember.nn.Parameter(ember.zeros(2))], **kw)
        assert str(ee.value) == str(te.value)
    params = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2,
              dtype=torch.complex64))]
    with pytest.raises(ValueError) as te:
        torch.optim.SparseAdam(params)
    eparams = [ember.nn.Parameter(ember.zeros(2)), ember.nn.Parameter(ember.zeros(2,
               dtype=ember.complex64))]
    with pytest.raises(ValueError) as ee:
        ember.optim.SparseAdam(eparams)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("name,kw", [
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-0.1)),
    ("Rprop", dict(lr=-0.1)), ("Rprop", dict(etas=(1.2, 0.5))), ("Rprop", dict(etas=(0.0, 1.2))),
    ("Adafactor", dict(lr=-1.0)), ("Adafactor", dict(beta2_decay=0.5)),
    ("Adafactor", dict(eps=(-1.0, 1e-3))), ("Adafactor", dict(eps=(None, -1.0))),
    ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1.0))])
def test_argument_errors_match_torch(name, kw):
    with pytest.raises(ValueError) as te:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **kw)
    with pytest.raises(ValueError) as ee:
        getattr(ember.optim, name)([ember.nn.Parameter(ember.zeros(2))], **kw)
    assert str(ee.value) == str(te.value)


def test_defaults_match_torch():
    import inspect
    for name in ("ASGD", "Rprop", "Adafactor", "SparseAdam"):
        se = inspect.signature(getattr(ember.optim, name).__init__)
        st = inspect.signature(getattr(torch.optim, name).__init__)
        assert [(p.name, p.default, p.kind) for p in se.parameters.values()] == \
            [(p.name, p.default, p.kind) for p in st.parameters.values()], name
        pe = ember.nn.Parameter(ember.zeros(2))
        pt = torch.nn.Parameter(torch.zeros(2))
        assert getattr(ember.optim, name)([pe]).defaults == \
            getattr(torch.optim, name)([pt]).defaults


# ---- swa_utils --------------------------------------------------------------------------

def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))


def _copy_weights(src_torch, dst_ember):
    sd = {k: ember.tensor(v.detach().numpy().copy()) for k, v in src_torch.state_dict().items()}
    dst_ember.load_state_dict(sd)


def _perturb(lib, model, k):
    r = np.random.default_rng(100 + k)
    with lib.no_grad():
        for p in model.parameters():
            p.add_(lib.tensor(r.standard_normal(tuple(p.shape)), dtype=p.dtype))
        for name, b in model.named_buffers():
            if b.is_floating_point():
                b.add_(lib.tensor(r.standard_normal(tuple(b.shape)), dtype=b.dtype))


@pytest.mark.parametrize("mode", ["swa", "ema_multi", "ema_single", "swa_single",
                                  "ema_buffers"])
def test_averaged_model_matches_torch(mode):
    def run(lib, base):
        su = lib.optim.swa_utils
        kw = {"swa": {}, "ema_multi": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.9)),
              "ema_single": dict(avg_fn=su.get_ema_avg_fn(0.8)),
              "swa_single": dict(avg_fn=su.get_swa_avg_fn()),
              "ema_buffers": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.7),
                                  use_buffers=True)}[mode]
        avg = su.AveragedModel(base, **kw)
        for k in range(4):
            _perturb(lib, base, k)
            avg.update_parameters(base)
        return avg

    tm = _net(torch)
    em = _net(ember)
    _copy_weights(tm, em)
    at, ae = run(torch, tm), run(ember, em)
    assert int(ae.n_averaged) == int(at.n_averaged) == 4
    sdt, sde = at.state_dict(), ae.state_dict()
    assert list(sde) == list(sdt)
    for k in sdt:
        np.testing.assert_allclose(sde[k].numpy(), sdt[k].numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=k)
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    at.eval()
    ae.eval()
    np.testing.assert_allclose(ae(ember.tensor(x)).detach().numpy(),
                               at(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_averaged_model_errors_and_avg_fn_values():
    su = ember.optim.swa_utils
    m = ember.nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        su.AveragedModel(m, avg_fn=su.get_swa_avg_fn(), multi_avg_fn=su.get_swa_multi_avg_fn())
    for f in (su.get_ema_avg_fn, su.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5"):
            f(1.5)
    a, c = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 6.0])
    np.testing.assert_allclose(su.get_swa_avg_fn()(a, c, 3).numpy(), [1.5, 3.0])
    np.testing.assert_allclose(su.get_ema_avg_fn(0.75)(a, c, 0).numpy(), [1.5, 3.0])
    ae, at = [ember.tensor([2.0, 4.0])], [torch.tensor([2.0, 4.0])]
    su.get_swa_multi_avg_fn()(ae, [ember.tensor([6.0, 8.0])], ember.tensor(3))
    torch.optim.swa_utils.get_swa_multi_avg_fn()(at, [torch.tensor([6.0, 8.0])],
                                                 torch.tensor(3))
    assert ae[0].tolist() == at[0].tolist() == [3.0, 5.0]


def test_update_bn_matches_torch():
    tm, em = _net(torch), _net(ember)
    _copy_weights(tm, em)
    r = np.random.default_rng(4)
    batches = [r.standard_normal((6, 3)).astype(np.float32) for _ in range(4)]
    tm.eval()
    em.eval()
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], tm)
    ember.optim.swa_utils.update_bn([(ember.tensor(b), 0) for b in batches], em)
    bt, be = tm[1], em[1]
    np.testing.assert_allclose(be.running_mean.numpy(), bt.running_mean.numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(be.running_var.numpy(), bt.running_var.numpy(), rtol=1e-5,
                               atol=1e-6)
    assert int(be.num_batches_tracked) == int(bt.num_batches_tracked) == 4
    assert be.momentum == bt.momentum == 0.1 and not em.training
    ember.optim.swa_utils.update_bn([], ember.nn.Linear(2, 2))  # no BatchNorm: nothing to do


@pytest.mark.parametrize("kw", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.01], anneal_epochs=3,
                                anneal_strategy="linear"), dict(swa_lr=0.02, anneal_epochs=0)])
def test_swalr_matches_torch(kw):
    def run(lib):
        ps = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))]
        opt = lib.optim.SGD([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.2}], lr=0.5)
        sched = lib.optim.swa_utils.SWALR(opt, **kw)
        lrs = [sched.get_last_lr()]
        for _ in range(12):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        return lrs, sched
    (le, se), (lt, st) = run(ember), run(torch)
    np.testing.assert_allclose(np.array(le), np.array(lt), rtol=1e-12, atol=0)
    sd = se.state_dict()
    assert set(sd) == set(st.state_dict())
    fresh = ember.optim.SGD([ember.nn.Parameter(ember.zeros(2)),
                             ember.nn.Parameter(ember.zeros(2))], lr=0.5)
    s2 = ember.optim.swa_utils.SWALR(fresh, swa_lr=0.3)
    s2.load_state_dict(sd)
    assert s2.anneal_func(0.5) == se.anneal_func(0.5) and s2.anneal_epochs == se.anneal_epochs


def test_swalr_errors_match_torch():
    for kw in (dict(anneal_strategy="exp"), dict(anneal_epochs=-1), dict(anneal_epochs=1.5)):
        opt_t = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        opt_e = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
        with pytest.raises(ValueError) as te:
            torch.optim.swa_utils.SWALR(opt_t, swa_lr=0.1, **kw)
        with pytest.raises(ValueError) as ee:
            ember.optim.swa_utils.SWALR(opt_e, swa_lr=0.1, **kw)
        assert str(ee.value) == str(te.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
        s = ember.optim.swa_utils.SWALR(opt, swa_lr=0.1)
        with pytest.raises(UserWarning, match="get_last_lr"):
            s.get_lr()


# ---- Muon -------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(lr=0.02), dict(lr=0.02, nesterov=False, weight_decay=0.0),
                                dict(lr=0.05, adjust_lr_fn="match_rms_adamw", momentum=0.9),
                                dict(lr=0.02, ns_steps=3, adjust_lr_fn="original")])
@pytest.mark.parametrize("shape", [(6, 4), (3, 5)])
def test_muon_matches_torch(kw, shape):
    r = np.random.default_rng(11)
    w = r.standard_normal(shape).astype(np.float32)
    grads = [r.standard_normal(shape).astype(np.float32) for _ in range(5)]

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(w))
        opt = lib.optim.Muon([p], **kw)
        for g in grads:
            p.grad = lib.tensor(g)
            opt.step()
        return p.detach().numpy(), opt.state[p]["momentum_buffer"].numpy()
    (pe, be), (pt, bt) = run(ember), run(torch)
    # the Newton-Schulz iteration runs in bfloat16 on both sides: updates agree to its
    # rounding, far below the step size
    np.testing.assert_allclose(pe, pt, rtol=0, atol=1e-6)
    np.testing.assert_allclose(be, bt, rtol=1e-6, atol=1e-7)
    assert np.abs(pt - w).max() > 1e-2


def test_muon_errors_match_torch():
    for kw in (dict(lr=-1.0), dict(momentum=-0.1), dict(weight_decay=-1.0),
               dict(adjust_lr_fn="bogus")):
        with pytest.raises(ValueError) as te:
            torch.optim.Muon([torch.nn.Parameter(torch.zeros(2, 2))], **kw)
        with pytest.raises(ValueError) as ee:
            ember.optim.Muon([ember.nn.Parameter(ember.zeros(2, 2))], **kw)
        assert str(ee.value) == str(te.value)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        ember.optim.Muon([ember.nn.Parameter(ember.zeros(3))])
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        torch.optim.Muon([torch.nn.Parameter(torch.zeros(3))])


# ---- swap_in_optimizer_params_and_state ---------------------------------------------------

def test_swap_in_optimizer_params_and_state_matches_torch():
    def run(lib):
        ps = make_params(lib, "float32")
        opt = lib.optim.Adam([{"params": ps[:2]}, {"params": ps[2:], "lr": 0.05}], lr=0.01)
        set_grads(lib, ps, 0, "float32")
        opt.step()
        live_before = [p.detach().numpy().copy() for p in ps]
        live_state = copy.deepcopy(state_arrays(opt, lib))
        swap_params = {f"p{i}": lib.nn.Parameter(p.detach().clone() * 2) for i, p in
                       enumerate(ps)}
        swap_sd = copy.deepcopy(opt.state_dict())
        swap_sd["param_groups"][1]["lr"] = 0.2
        with lib.optim.swap_in_optimizer_params_and_state(opt, swap_params, swap_sd):
            assert opt.param_groups[1]["lr"] == 0.2
            for i, p in enumerate(swap_params.values()):
                p.grad = lib.tensor(GRADS[1][i], dtype=lib.float32)
            opt.step()
        # the live optimizer is untouched; the swapped-in tensors were updated in place
        assert opt.param_groups[1]["lr"] == 0.05
        for a, b in zip(live_before, ps):
            np.testing.assert_array_equal(a, b.detach().numpy())
        for a, b in zip(live_state, state_arrays(opt, lib)):
            for k in a:
                np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]))
        return ([p.detach().numpy() for p in swap_params.values()],
                [swap_sd["state"][i]["exp_avg"].numpy() for i in sorted(swap_sd["state"])])
    (pe, se), (pt, st) = run(ember), run(torch)
    for a, b in zip(pe + se, pt + st):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_swap_in_errors_match_torch():
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.zeros(2))
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, opt.state_dict()):
                pass
        p.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        bad = copy.deepcopy(sd)
        bad["param_groups"][0]["extra"] = 1
        with pytest.raises(RuntimeError, match=r"Keys only in swap-in: \['extra'\]"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, bad):
                pass
        bad = copy.deepcopy(sd)
        bad["state"][7] = {}
        with pytest.raises(RuntimeError, match="got extra keys"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p}, bad):
                pass
        with pytest.raises(RuntimeError, match="match optimizer.param_groups ordering"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {}, sd):
                pass


def test_sparse_adam_sparse_grads_match_torch():
    r = np.random.default_rng(8)
    init = r.standard_normal((5, 2))
    idx = [[0, 3, 3], [1, 0, 0]]  # (3, 0) twice: coalesced into one entry, summed
    vals = [[0.5, -1.0, 2.0], [0.0, 1.5, -0.5]]  # an explicitly stored zero is still updated

    def run(lib):
        p = lib.nn.Parameter(lib.tensor(init))
        opt = lib.optim.SparseAdam([p], lr=0.1)
        for v in vals:
            p.grad = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(v, dtype=lib.float64),
                                           (5, 2), check_invariants=True)
            opt.step()
        return p.detach().numpy(), opt.state[p]["exp_avg_sq"].numpy()
    (pe, se), (pt, st) = run(ember), run(torch)
    np.testing.assert_allclose(pe, pt, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(se, st, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("SGD", dict(lr=0.1, momentum=0.5, nesterov=True)),
                                     ("SGD", dict(lr=0.1, maximize=True)),
                                     ("Adagrad", dict(lr=0.1)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01, maximize=True))])
def test_sgd_adagrad_sparse_grads_match_torch(name, kw):
    # uncoalesced sparse gradients (what Embedding(sparse=True) produces): rows outside the
    # stored indices keep their values, duplicates are summed
    init = np.arange(15.0).reshape(5, 3) / 7

    def run(lib):
        w = lib.nn.Parameter(lib.tensor(init))
        opt = getattr(lib.optim, name)([w], **kw)
        for it, rows in enumerate(([0, 2, 2, 4], [1, 1], [3])):
            v = np.arange(len(rows) * 3, dtype=np.float64).reshape(-1, 3) / 5 - it
            w.grad = lib.sparse_coo_tensor(lib.tensor([rows]), lib.tensor(v), (5, 3),
                                           check_invariants=True)
            with warnings.catch_warnings():
                # torch's Adagrad builds sparse tensors internally: its invariant-check notice
                warnings.filterwarnings("ignore", "Sparse invariant checks")
                opt.step()
        return w.detach().numpy()
    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name,kw", [("SGD", dict(weight_decay=0.1)),
                                     ("Adagrad", dict(weight_decay=0.1))] +
                         [(name, {}) for name in ("Adam", "AdamW", "RMSprop", "Adadelta",
                                                  "Adamax", "NAdam", "RAdam", "ASGD", "Rprop",
                                                  "Adafactor", "Muon")])
def test_sparse_grads_refused_as_torch(name, kw):
    # the dense-only optimizers, and SGD/Adagrad with weight decay
    errors = []
    for lib in (torch, ember):
        w = lib.nn.Parameter(lib.ones(4, 2))
        w.grad = lib.sparse_coo_tensor(lib.tensor([[0, 2]]), lib.ones(2, 2), (4, 2),
                                       check_invariants=True)
        with pytest.raises(RuntimeError) as e:
            getattr(lib.optim, name)([w], **kw).step()
        errors.append(str(e.value))
    assert errors[0] == errors[1]
