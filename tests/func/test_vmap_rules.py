"""Batching rules under composition: nested vmap, vmap(grad), in-place ops, randomness,
errors, and the looping fallback, against torch.func."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import func as ef
from ember._core.op import Op
from ember.ops import _batching as batching

pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")


def pair(shape, seed=0, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a), torch.tensor(a)


def close(e, t, rtol=1e-6, atol=1e-8):
    if isinstance(e, (tuple, list)):
        for a, b in zip(e, t):
            close(a, b, rtol, atol)
        return
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


IDX = np.array([2, 0, 1, 1])
FUNCS = {
    "gather_sort": lambda m: lambda x: m.sort(x, -1)[0].gather(-1, m.tensor([[0, 2]] * 4)).sum(),
    "index_select": lambda m: lambda x: (x.index_select(1, m.tensor(IDX)) ** 2).sum(),
    "index_add": lambda m: lambda x: m.zeros(4, 3, dtype=x.dtype).index_add(
        0, m.tensor(IDX), x.exp()).sin().sum(),
    "getitem_adv": lambda m: lambda x: (x[:, m.tensor(IDX)[:2]] * x[:, 1:3]).sum(),
    "setitem": lambda m: lambda x: _setitem(m, x),
    "cumsum_roll": lambda m: lambda x: (x.cumsum(0).roll(1, 1) * x).sum(),
    "tril_diag": lambda m: lambda x: (x[:3].tril() @ x[:3].triu()).diagonal().sum(),
    "einsum": lambda m: lambda x: m.einsum("ij,kj->ik", x, x.tanh()).sum(),
    "addmm": lambda m: lambda x: m.addmm(x[:, :1], x, x.t(), beta=0.5).sum(),
    "linalg": lambda m: lambda x: m.linalg.det(x[:3] @ x[:3].t() + m.eye(3, dtype=x.dtype)),
    "softmax_max": lambda m: lambda x: (m.softmax(x, 0) * x.max(1, keepdim=True)[0]).sum(),
    "cat_stack": lambda m: lambda x: (m.cat([x, x.exp()], 1) ** 2).sum() + m.stack([x, x], 1)[:, 1].sum(),
    "masked_fill": lambda m: lambda x: x.masked_fill(x > 0, 0.5).mul(x).sum(),
    "fft": lambda m: lambda x: m.fft.rfft(x, dim=0).abs().sum(),
}


def _setitem(m, x):
    y = x.clone()
    y[1] = x[0] * 2
    return (y * x).sum()


@pytest.mark.parametrize("name", list(FUNCS))
def test_vmap_grad_and_nested_vmap_match_torch(name):
    xe, xt = pair((5, 4, 3), 1)
    fe, ft = FUNCS[name](ember), FUNCS[name](torch)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no op may reach the looping fallback
        batching._WARNED.clear()
        close(ef.vmap(fe)(xe), torch.func.vmap(ft)(xt))
        close(ef.vmap(ef.grad(fe))(xe), torch.func.vmap(torch.func.grad(ft))(xt))
        x2e, x2t = pair((2, 5, 4, 3), 2)
        close(ef.vmap(ef.vmap(fe))(x2e), torch.func.vmap(torch.func.vmap(ft))(x2t))
        close(ef.vmap(fe, in_dims=1)(xe.movedim(0, 1).contiguous()), torch.func.vmap(ft)(xt))


def test_inplace_non_elementwise_ops_write_the_batch():
    xe, xt = pair((3, 4, 5), 3)
    ie = ember.tensor([[0, 1, 2, 3, 0]] * 4)
    it = torch.tensor([[0, 1, 2, 3, 0]] * 4)
    fe = lambda x: x.clone().scatter_add_(0, ie, x.exp()).cumsum_(1)  # noqa: E731
    ft = lambda x: x.clone().scatter_add_(0, it, x.exp()).cumsum_(1)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch loops over cumsum_
        want = torch.func.vmap(ft)(xt)
    close(ef.vmap(fe)(xe), want)


def test_dynamic_shape_ops_raise():
    xe, _ = pair((3, 4), 4)
    for f in (lambda a: ember.nonzero(a), lambda a: a[a > 0], lambda a: ember.unique(a)):
        with pytest.raises(RuntimeError, match="dynamic shape"):
            ef.vmap(f)(xe)


def test_errors_match_torch():
    xe, _ = pair((3, 2), 5)
    with pytest.raises(RuntimeError, match=r"\.item\(\)"):
        ef.vmap(lambda a: a.sum().item())(xe)
    with pytest.raises(RuntimeError, match="not possible because"):
        ef.vmap(lambda a: ember.zeros(2).add_(a))(xe)
    with pytest.raises(RuntimeError, match="randomness"):
        ef.vmap(lambda a: ember.nn.functional.dropout(a, 0.5))(xe)
    with pytest.raises(ValueError, match="same size"):
        ef.vmap(lambda a, b: a + b)(xe, ember.zeros(4, 2))


def test_dropout_randomness_different_draws_per_example():
    x = ember.ones(6, 50)
    out = ef.vmap(lambda a: ember.nn.functional.dropout(a, 0.5), randomness="different")(x)
    assert out.shape == (6, 50)
    assert not np.array_equal(out[0].numpy(), out[1].numpy())


def test_weak_zero_dim_promotion_under_vmap():
    a = ember.tensor(np.arange(6, dtype=np.uint8).reshape(3, 2))
    s = ember.tensor(np.array([1, 2, 3], dtype=np.int8))
    r = ef.vmap(lambda x, y: x + y)(a, s)
    t = torch.func.vmap(lambda x, y: x + y)(torch.tensor(a.numpy()), torch.tensor(s.numpy()))
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(r.numpy(), t.numpy())


def test_fallback_warns_once_naming_the_operator():
    name = "_vmap_test_no_rule"
    op = batching.REGISTRY.get(name) or Op(name, lambda xp, x: x[::-1].copy(), None,
                                           differentiable=False)
    batching._WARNED.discard(name)
    xe, _ = pair((3, 5), 6)
    with pytest.warns(UserWarning, match=f"batching rule for ember.ops.{name}"):
        r = ef.vmap(lambda a: op(a))(xe)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ef.vmap(lambda a: op(a))(xe)  # second time: silent
    np.testing.assert_array_equal(r.numpy(), xe.numpy()[:, ::-1])
