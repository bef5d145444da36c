"""LBFGS against torch.optim.LBFGS with the objective computed outside both libraries.

The closure computes the loss and the gradients in NumPy and hands the same numbers to
ember and to torch, so any difference in the trajectories comes from the optimizer's own
arithmetic (two-loop recursion, step length, line search), not from the model.  The
parameters mix shapes, a complex one and one that never gets a gradient.  (The op
database's optim.LBFGS records run it on the non-NumPy test backend too.)"""
import warnings

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 4), (4,), (2,)]  # the last parameter is complex
_rng = np.random.default_rng(7)
_MATS = []
for _s in SHAPES:
    _m = 2 * int(np.prod(_s)) if _s is SHAPES[-1] else int(np.prod(_s))
    _a = _rng.standard_normal((_m, _m))
    _MATS.append(_a @ _a.T / _m + np.eye(_m))

KWARGS = [dict(), dict(line_search_fn="strong_wolfe"),
          dict(lr=0.5, history_size=3, max_iter=7),
          dict(line_search_fn="strong_wolfe", history_size=2, max_iter=5, max_eval=9)]


def _objective(xs, dtype):
    """Loss and per-parameter gradients of a convex quartic on the real coordinates."""
    f, grads = 0.0, []
    for x, a in zip(xs, _MATS):
        v = x.reshape(-1)
        v = np.concatenate([v.real, v.imag]) if np.iscomplexobj(v) else v
        v = v.astype(np.float64)
        f += 0.5 * v @ a @ v + 0.05 * (v ** 4).sum() - v.sum()
        g = a @ v + 0.2 * v ** 3 - 1
        if np.iscomplexobj(x):
            g = g[:x.size] + 1j * g[x.size:]
        grads.append(g.reshape(x.shape).astype(x.dtype))
    return np.asarray(f, dtype), grads


def _params(lib, dtype):
    cdtype = {"float32": "complex64", "float64": "complex128"}[dtype]
    ps = []
    for s in SHAPES:
        dt = cdtype if s is SHAPES[-1] else dtype
        a = np.linspace(-1.0, 1.5, int(np.prod(s))).reshape(s)
        if s is SHAPES[-1]:
            a = a + 0.5j * a[::-1]
        t = lib.tensor(a.astype(dt))
        ps.append(lib.nn.Parameter(t))
    frozen = lib.nn.Parameter(lib.ones(3, dtype=getattr(lib, dtype)))  # grad stays None
    return ps, frozen


def _run(lib, dtype, kw, steps, opt_state=None):
    ps, frozen = _params(lib, dtype)
    opt = lib.optim.LBFGS(ps + [frozen], **kw)
    if opt_state is not None:
        opt.load_state_dict(opt_state)

    def closure():
        f, grads = _objective([p.detach().numpy() for p in ps], dtype)
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g)
        return lib.tensor(f)
    traj, losses = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure)))
        traj.append(np.concatenate([p.detach().numpy().ravel() for p in ps]))
    return np.array(traj), losses, opt


def _tol(dtype):
    return dict(rtol=1e-12, atol=1e-13) if dtype == "float64" else dict(rtol=1e-6, atol=1e-6)


def _state_arrays(opt, lib):
    st = opt.state[opt.param_groups[0]["params"][0]]
    out = {k: np.asarray(st[k].detach().numpy() if isinstance(st[k], lib.Tensor)
                         else st[k], dtype=np.float64)
           for k in ("d", "t", "H_diag", "prev_flat_grad")}
    for k in ("old_dirs", "old_stps", "ro"):
        out[k] = np.array([v.detach().numpy() for v in st[k]], dtype=np.float64)
    return out, (st["func_evals"], st["n_iter"], st["prev_loss"])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", KWARGS, ids=["plain", "wolfe", "lr-history3", "wolfe-history2"])
def test_lbfgs_equals_torch(kw, dtype):
    a, la, ea = _run(ember, dtype, kw, steps=5)
    b, lb, eb = _run(torch, dtype, kw, steps=5)
    np.testing.assert_allclose(a, b, **_tol(dtype))
    np.testing.assert_allclose(la, lb, **_tol(dtype))
    sa, ca = _state_arrays(ea, ember)
    sb, cb = _state_arrays(eb, torch)
    assert ca[:2] == cb[:2]  # func_evals, n_iter
    np.testing.assert_allclose(ca[2], cb[2], **_tol(dtype))
    if dtype == "float32":
        return  # its history pairs (y.s ~ 1e-9 at the optimum) are rounding noise by now
    # near the optimum y.s cancels, so ro = 1/ys carries that rounding error amplified
    for k in sa:
        np.testing.assert_allclose(sa[k], sb[k], err_msg=k, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kw", KWARGS[:2], ids=["plain", "wolfe"])
def test_lbfgs_resumes_from_a_state_dict_like_torch(kw):
    kw = dict(kw, history_size=4, max_iter=3)
    _, _, ea = _run(ember, "float64", kw, steps=2)
    _, _, tb = _run(torch, "float64", kw, steps=2)
    # a fresh optimizer (and fresh parameters at the start point) continues from the state
    a, la, _ = _run(ember, "float64", kw, steps=2, opt_state=ea.state_dict())
    b, lb, _ = _run(torch, "float64", kw, steps=2, opt_state=tb.state_dict())
    np.testing.assert_allclose(a, b, **_tol("float64"))
    np.testing.assert_allclose(la, lb, **_tol("float64"))


def test_lbfgs_sparse_gradient_matches_torch():
    """A sparse COO gradient (rows 0, 2 twice, 4: uncoalesced) is used densified."""
    rows = np.array([0, 2, 2, 4])
    res = []
    for lib in (ember, torch):
        w = lib.nn.Parameter(lib.tensor(np.linspace(-1, 1, 15).reshape(5, 3)))
        opt = lib.optim.LBFGS([w], line_search_fn="strong_wolfe", max_iter=4)

        def closure():
            x = w.detach().numpy()
            loss = ((x[rows] - 0.25) ** 2).sum()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's "sparse invariant checks" notice
                w.grad = lib.sparse_coo_tensor(lib.tensor(rows[None]),
                                               lib.tensor(2 * (x[rows] - 0.25)), (5, 3))
            return lib.tensor(loss)
        for _ in range(2):
            opt.step(closure)
        assert w.grad.is_sparse
        res.append(w.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12, atol=1e-14)


def test_lbfgs_step_is_visible_to_dispatch_modes():
    """Gathering, the direction and the parameter updates are operator calls a mode sees."""
    seen = []

    class Record(ember.DispatchMode):
        def __ember_dispatch__(self, op, args, kwargs):
            seen.append(getattr(op, "base", op).name)
            return op(*args, **kwargs)
    ps, _ = _params(ember, "float64")
    opt = ember.optim.LBFGS(ps, max_iter=3, line_search_fn="strong_wolfe")

    def closure():
        f, grads = _objective([p.detach().numpy() for p in ps], "float64")
        for p, g in zip(ps, grads):
            p.grad = ember.tensor(g)
        return ember.tensor(f)
    before = [p.detach().clone() for p in ps]
    with Record():
        opt.step(closure)
    assert {"_lbfgs_gather", "_lbfgs_direction", "_lbfgs_step"} <= set(seen)
    assert all(not ember.equal(a, p.detach()) for a, p in zip(before, ps))
