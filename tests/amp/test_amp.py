"""autocast (CPU policy) and GradScaler against torch."""
import numpy as np
import pytest
import torch

import ember

D = {torch.float32: ember.float32, torch.bfloat16: ember.bfloat16, torch.float64: ember.float64}


def _pair(*shape, dtype=np.float32, rg=False, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (torch.tensor(a, requires_grad=rg), ember.tensor(a, requires_grad=rg))


def _check(tr, er, atol=3e-2):
    assert D[tr.dtype] == er.dtype, (tr.dtype, er.dtype)
    np.testing.assert_allclose(er.float().detach().numpy(), tr.float().detach().numpy(),
                               rtol=2e-2, atol=atol)


CASES = {
    "linear": lambda lib, F, x, w, b: F.linear(x, w, b),
    "matmul": lambda lib, F, x, w, b: x @ w.t(),
    "softmax": lambda lib, F, x, w, b: F.softmax(x, -1),
    "softmax_bf16": lambda lib, F, x, w, b: F.softmax(x.bfloat16(), -1),
    "add_mixed": lambda lib, F, x, w, b: x.bfloat16() + x,
    "cat_mixed": lambda lib, F, x, w, b: lib.cat([x.bfloat16(), x]),
    "linear_then_ce": lambda lib, F, x, w, b: F.cross_entropy(
        F.linear(x, w, b), lib.tensor([0, 2, 1, 2])),
    "float64_mm": lambda lib, F, x, w, b: x.double() @ w.double().t(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_autocast_dtypes_values_grads(name):
    tx, ex = _pair(4, 5, rg=True)
    tw, ew = _pair(3, 5, rg=True, seed=1)
    tb, eb = _pair(3, rg=True, seed=2)
    with torch.autocast("cpu"):
        tr = CASES[name](torch, torch.nn.functional, tx, tw, tb)
    with ember.autocast("cpu"):
        er = CASES[name](ember, ember.nn.functional, ex, ew, eb)
    _check(tr, er)
    tr.float().sum().backward()
    er.float().sum().backward()
    for t, e in ((tx, ex), (tw, ew), (tb, eb)):
        assert (t.grad is None) == (e.grad is None)
        if t.grad is not None:
            _check(t.grad, e.grad, atol=5e-2)


def test_conv2d_and_attention():
    tx, ex = _pair(2, 3, 6, 6)
    tw, ew = _pair(4, 3, 3, 3, rg=True, seed=1)
    tb, eb = _pair(4, rg=True, seed=2)
    tq, eq = _pair(2, 4, 3, seed=3)
    with torch.autocast("cpu"):
        tr = torch.nn.functional.conv2d(tx, tw, tb, padding=1)
        ta = torch.nn.functional.scaled_dot_product_attention(tq, tq, tq)
    with ember.autocast("cpu"):
        er = ember.nn.functional.conv2d(ex, ew, eb, padding=1)
        ea = ember.nn.functional.scaled_dot_product_attention(eq, eq, eq)
    _check(tr, er, atol=6e-2)
    _check(ta, ea)
    tr.float().sum().backward()
    er.float().sum().backward()
    assert ew.grad.dtype == ember.float32 and eb.grad.dtype == ember.float32
    _check(tw.grad, ew.grad, atol=0.3)
    _check(tb.grad, eb.grad)


def test_state_nesting_and_decorator():
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled()
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.float32
        with ember.autocast("cpu", dtype=ember.float16):
            assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.float16
        assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert (ember.ones(2, 2) @ ember.ones(2, 2)).dtype == ember.float32

    @ember.autocast("cpu")
    def f(a):
        return a @ a
    assert f(ember.ones(2, 2)).dtype == ember.bfloat16
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with ember.autocast("cpu", dtype=ember.float64):
            assert not ember.is_autocast_enabled("cpu")


def test_weight_cast_cache_follows_inplace_update():
    w = ember.ones(2, 2, requires_grad=True)
    x = ember.ones(2, 2)
    with ember.autocast("cpu"):
        a = x @ w
        with ember.no_grad():
            w.mul_(2)
        b = x @ w
    assert a[0, 0].item() == 2.0 and b[0, 0].item() == 4.0


def _run_scaler(lib, grads_per_step, **kw):
    p = lib.nn.Parameter(lib.ones(3))
    opt = lib.optim.SGD([p], lr=0.1)
    sc = lib.amp.GradScaler("cpu", **kw)
    trace = []
    for g in grads_per_step:
        opt.zero_grad()
        loss = sc.scale((p * lib.tensor(g)).sum())
        loss.backward()
        sc.step(opt)
        sc.update()
        trace.append((sc.get_scale(), sc._get_growth_tracker(), p.detach().numpy().copy()))
    return trace, sc


def test_grad_scaler_matches_torch():
    steps = [[1.0, 2.0, 3.0], [1.0, float("inf"), 0.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0],
             [float("nan"), 0.0, 0.0], [1.0, 0.0, 2.0], [2.0, 2.0, 2.0]]
    kw = dict(init_scale=1024.0, growth_interval=2)
    tt, tsc = _run_scaler(torch, steps, **kw)
    et, esc = _run_scaler(ember, steps, **kw)
    for (ts, tg, tp), (es, eg, ep) in zip(tt, et):
        assert ts == es and tg == eg
        np.testing.assert_allclose(ep, tp, rtol=1e-6)
    assert esc.state_dict() == tsc.state_dict()
    fresh = ember.amp.GradScaler("cpu")
    fresh.load_state_dict(esc.state_dict())
    assert fresh.get_scale() == esc.get_scale() and fresh.state_dict() == esc.state_dict()
    esc.update(new_scale=8.0)
    assert esc.get_scale() == 8.0


def test_grad_scaler_misuse_and_disabled():
    p = ember.nn.Parameter(ember.ones(2))
    opt = ember.optim.SGD([p], lr=1.0)
    sc = ember.amp.GradScaler("cpu")
    sc.scale(p.sum()).backward()
    sc.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="already been called"):
        sc.unscale_(opt)
    sc.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        sc.step(opt)
    off = ember.amp.GradScaler("cpu", enabled=False)
    t = ember.ones(2)
    assert off.scale(t) is t and off.get_scale() == 1.0 and off.state_dict() == {}
    assert not off.is_enabled()


@pytest.mark.parametrize("device", ["mps", "xpu", "hpu", "mtia", "xla"])
def test_other_accelerator_regions_answer_as_torch(device):
    # kornia asks is_autocast_enabled(d) for every accelerator type torch knows
    import warnings
    res = []
    for lib in (torch, ember):
        out = [lib.amp.is_autocast_available(device), lib.is_autocast_enabled(device),
               str(lib.get_autocast_dtype(device)).split(".")[1]]
        with lib.autocast(device, dtype=lib.bfloat16):
            x = lib.ones(2, 3) @ lib.ones(3, 2)  # CPU operators are not cast
            out += [lib.is_autocast_enabled(device), str(x.dtype).split(".")[1],
                    str(lib.get_autocast_dtype(device)).split(".")[1]]
        out.append(lib.is_autocast_enabled(device))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with lib.autocast(device, dtype=lib.float32):
                out.append(lib.is_autocast_enabled(device))
        out.append([str(m.message) for m in w])
        res.append(out)
    assert res[0] == res[1]
