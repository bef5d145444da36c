"""ember.func and ember.autograd.functional against torch.func / torch.autograd.functional."""
import numpy as np
import pytest
import torch

import ember
import ember.autograd.forward_ad as efwd
import ember.autograd.functional as EF
import torch.autograd.functional as TF
from ember import func as ef

# torch.func's own internals call the deprecated torch.jit.script
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def pair(shape, seed=0, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a), torch.tensor(a)


def close(e, t, rtol=1e-6, atol=1e-8):
    if isinstance(e, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, rtol, atol)
        return
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


W_E, W_T = pair((4, 3), 7)
FUNCS = {
    "elementwise": (lambda m, w: lambda x: (x.sin() * x.exp()).sum()),
    "matmul_chain": (lambda m, w: lambda x: ((w @ x).tanh() @ (w @ x)).sum()),
    "softmax_logsumexp": (lambda m, w: lambda x: m.softmax(w @ x, 0)[0] + m.logsumexp(x, 0)),
}


@pytest.mark.parametrize("name", list(FUNCS))
@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd", "hessian"])
def test_transforms_match_torch_func(name, transform):
    xe, xt = pair((3,), 1)
    fe, ft = FUNCS[name](ember, W_E), FUNCS[name](torch, W_T)
    close(getattr(ef, transform)(fe)(xe), getattr(torch.func, transform)(ft)(xt))


def test_vjp_jvp_linearize_match_torch():
    xe, xt = pair((3,), 2)
    ve, vt = pair((4,), 3)
    te, tt = pair((3,), 4)
    fe = lambda x: (W_E @ x).sin()  # noqa: E731
    ft = lambda x: (W_T @ x).sin()  # noqa: E731
    oe, vjp_e = ef.vjp(fe, xe)
    ot, vjp_t = torch.func.vjp(ft, xt)
    close(oe, ot)
    close(vjp_e(ve), vjp_t(vt))
    close(ef.jvp(fe, (xe,), (te,)), torch.func.jvp(ft, (xt,), (tt,)))
    out, jfn = ef.linearize(fe, xe)
    close(jfn(te), torch.func.jvp(ft, (xt,), (tt,))[1])


def test_grad_argnums_has_aux_and_errors():
    xe, xt = pair((3,), 5)
    ye, yt = pair((3,), 6)
    g = ef.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(xe, ye)
    t = torch.func.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(xt, yt)
    close(g, t)
    g, aux = ef.grad(lambda x: ((x ** 2).sum(), x.mean()), has_aux=True)(xe)
    close(g, 2 * xt)
    assert abs(aux.item() - xt.mean().item()) < 1e-12
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        ef.grad(lambda x: x * 2)(xe)
    with pytest.raises(RuntimeError, match="argnums"):
        ef.grad(lambda x: x.sum(), argnums=3)(xe)


def test_higher_order_compositions():
    xe, xt = pair((), 8)
    f = lambda m: lambda x: (x.sin() * x).exp()  # noqa: E731
    close(ef.grad(ef.grad(ef.grad(f(ember))))(xe),
          torch.func.grad(torch.func.grad(torch.func.grad(f(torch))))(xt))
    ve, vt = pair((3,), 9)
    g = lambda m, w: lambda x: (w @ x).tanh().sum()  # noqa: E731
    close(ef.jacfwd(ef.jacrev(g(ember, W_E)))(ve), torch.func.jacfwd(torch.func.jacrev(
        g(torch, W_T)))(vt))
    close(ef.jacrev(ef.jacrev(g(ember, W_E)))(ve), torch.func.hessian(g(torch, W_T))(vt))


def test_vmap_in_dims_out_dims_nested_and_pytrees():
    xe, xt = pair((2, 3, 4), 10)
    ye, yt = pair((4,), 11)
    close(ef.vmap(lambda a, b: a * b, in_dims=(1, None))(xe, ye),
          torch.func.vmap(lambda a, b: a * b, in_dims=(1, None))(xt, yt))
    close(ef.vmap(lambda a: a.sum(0), in_dims=2, out_dims=1)(xe),
          torch.func.vmap(lambda a: a.sum(0), in_dims=2, out_dims=1)(xt))
    close(ef.vmap(ef.vmap(lambda a: (a @ ye).exp()))(xe),
          torch.func.vmap(torch.func.vmap(lambda a: (a @ yt).exp()))(xt))
    de = {"a": xe, "b": (ye,)}
    dt = {"a": xt, "b": (yt,)}
    close(ef.vmap(lambda d: d["a"].sum(-1) + d["b"][0].sum(), in_dims=({"a": 0, "b": (None,)},))
          (de), torch.func.vmap(lambda d: d["a"].sum(-1) + d["b"][0].sum(),
                                in_dims=({"a": 0, "b": (None,)},))(dt))
    close(ef.vmap(lambda a: a.exp(), chunk_size=1)(xe), xt.exp())


def test_vmap_errors_match_torch():
    xe, _ = pair((3, 2), 12)
    ze, _ = pair((4, 2), 13)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        ef.vmap(lambda a, b: a + b)(xe, ze)
    with pytest.raises(RuntimeError, match=r"\.item\(\)"):
        ef.vmap(lambda a: a.sum().item())(xe)
    with pytest.raises(RuntimeError, match="randomness"):
        ef.vmap(lambda a: a + ember.randn(2))(xe)
    with pytest.raises(RuntimeError, match="not possible because"):
        ef.vmap(lambda a: ember.zeros(2).add_(a))(xe)
    with pytest.raises(ValueError, match="in_dims"):
        ef.vmap(lambda a: a, in_dims=(0, 0))(xe)


def test_vmap_randomness_modes():
    xe = ember.zeros(5, 3)
    diff = ef.vmap(lambda a: a + ember.rand(3), randomness="different")(xe)
    same = ef.vmap(lambda a: a + ember.rand(3), randomness="same")(xe)
    assert not np.allclose(diff[0].numpy(), diff[1].numpy())
    np.testing.assert_array_equal(same[0].numpy(), same[4].numpy())


def test_per_sample_gradients_of_an_mlp_match_torch():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    em = ember.nn.Sequential(ember.nn.Linear(5, 8), ember.nn.Tanh(), ember.nn.Linear(8, 2))
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    xe, xt = pair((6, 5), 14, np.float32)
    ye = ember.tensor([0, 1, 1, 0, 1, 0])
    yt = torch.tensor([0, 1, 1, 0, 1, 0])

    def loss(lib, model):
        def f(params, x, y):
            out = lib.func.functional_call(model, params, (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, y.unsqueeze(0))
        return f
    pe = {k: v.detach() for k, v in em.named_parameters()}
    pt = {k: v.detach() for k, v in tm.named_parameters()}
    ge = ef.vmap(ef.grad(loss(ember, em)), in_dims=(None, 0, 0))(pe, xe, ye)
    gt = torch.func.vmap(torch.func.grad(loss(torch, tm)), in_dims=(None, 0, 0))(pt, xt, yt)
    for k in gt:
        close(ge[k], gt[k], rtol=1e-4, atol=1e-6)


def test_stack_module_state_and_ensembling():
    models = [ember.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = ef.stack_module_state(models)
    assert params["weight"].shape == (4, 2, 3)
    x = ember.randn(5, 3)
    base = models[0]

    def run(p, b, x):
        return ef.functional_call(base, (p, b), (x,))
    out = ef.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_forward_ad_dual_numbers_match_torch():
    xe, xt = pair((4,), 15)
    ve, vt = pair((4,), 16)
    with efwd.dual_level():
        d = efwd.make_dual(xe, ve)
        out = (d.sin() * d.cumsum(0)).softmax(0)
        pe, te = efwd.unpack_dual(out)
    import torch.autograd.forward_ad as tfwd
    with tfwd.dual_level():
        d = tfwd.make_dual(xt, vt)
        out = (d.sin() * d.cumsum(0)).softmax(0)
        pt, tt = tfwd.unpack_dual(out)
    close(pe, pt)
    close(te, tt)
    with pytest.raises(RuntimeError, match="dual_level"):
        efwd.make_dual(xe, ve)


def test_forward_ad_against_finite_differences():
    xe, _ = pair((3,), 17)
    ve, _ = pair((3,), 18)
    f = lambda x: (x.exp() / (1 + x * x)).log1p()  # noqa: E731
    with efwd.dual_level():
        _, t = efwd.unpack_dual(f(efwd.make_dual(xe, ve)))
    eps = 1e-6
    fd = (f(xe + eps * ve) - f(xe - eps * ve)) / (2 * eps)
    np.testing.assert_allclose(t.numpy(), fd.numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("vectorize", [False, True])
def test_autograd_functional_matches_torch(vectorize):
    xe, xt = pair((3,), 19)
    ye, yt = pair((3,), 20)
    fe = lambda a, b: ((W_E @ a).tanh(), (a * b).sum())  # noqa: E731
    ft = lambda a, b: ((W_T @ a).tanh(), (a * b).sum())  # noqa: E731
    close(EF.jacobian(fe, (xe, ye), vectorize=vectorize),
          TF.jacobian(ft, (xt, yt), vectorize=vectorize))
    se = lambda a, b: ((W_E @ a).tanh() * b.sum()).sum()  # noqa: E731
    st = lambda a, b: ((W_T @ a).tanh() * b.sum()).sum()  # noqa: E731
    close(EF.hessian(se, (xe, ye), vectorize=vectorize),
          TF.hessian(st, (xt, yt), vectorize=vectorize))
    close(EF.hessian(lambda a: se(a, ye), xe), TF.hessian(lambda a: st(a, yt), xt))
    for name in ("vjp", "vhp", "hvp"):
        v = (pair((3,), 21)[0], pair((3,), 22)[0]) if name != "vjp" else None
        vt = (torch.tensor(v[0].numpy()), torch.tensor(v[1].numpy())) if v else None
        close(getattr(EF, name)(se, (xe, ye), v), getattr(TF, name)(st, (xt, yt), vt))
    ve, vt = pair((3,), 23)
    close(EF.jvp(lambda a: (W_E @ a).sin(), xe, ve), TF.jvp(lambda a: (W_T @ a).sin(), xt, vt))


def test_autograd_functional_forward_mode_strategy_and_create_graph():
    xe, xt = pair((3,), 24)
    fe = lambda a: (W_E @ a).sin()  # noqa: E731
    ft = lambda a: (W_T @ a).sin()  # noqa: E731
    close(EF.jacobian(fe, xe, vectorize=True, strategy="forward-mode"),
          TF.jacobian(ft, xt, vectorize=True, strategy="forward-mode"))
    xe.requires_grad_(True)
    xt.requires_grad_(True)
    je = EF.jacobian(fe, xe, create_graph=True)
    jt = TF.jacobian(ft, xt, create_graph=True)
    assert je.requires_grad
    close(ember.autograd.grad(je.sum(), xe)[0], torch.autograd.grad(jt.sum(), xt)[0])
