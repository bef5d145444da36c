"""What vmap refuses as torch's does (Tensor.requires_grad_, backward()) and what it still
allows (factories, Parameter, the requires_grad setter, func.grad and func.jvp inside)."""
import numpy as np
import pytest
import torch

import ember

# torch's own lazy imports (embedding, func.jvp) script helpers with its deprecated jit
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")

X = np.arange(15.).reshape(3, 5)


def _optimizer_step(lib):
    p = lib.zeros(5)

    def f(g):
        q = p.clone().requires_grad_(True)
        opt = lib.optim.SGD([q], lr=0.1)
        q.grad = g
        opt.step()
        return q.detach()
    return f


def _backward(lib):
    idx = lib.tensor([[0, 2, 2], [5, 0, 1]])

    def f(weight):
        w = weight.clone()
        w.requires_grad = True
        (lib.nn.functional.embedding(idx, w, sparse=True) * 2).sum().backward()
        return w.grad.to_dense()
    return f


@pytest.mark.parametrize("make, x, match", [
    (_optimizer_step, X, r"call Tensor\.requires_grad_\(\)"),
    (lambda lib: lambda g: g.detach().requires_grad_(False), X,
     r"call Tensor\.requires_grad_\(\)"),
    (_backward, np.arange(54.).reshape(3, 6, 3),
     r"backward\(\) called inside a functorch transform"),
])
def test_refused_inside_vmap_like_torch(make, x, match):
    with pytest.raises(RuntimeError, match=match):
        torch.func.vmap(make(torch))(torch.tensor(x))
    with pytest.raises(RuntimeError, match=match):
        ember.func.vmap(make(ember))(ember.tensor(x))


def test_still_allowed_inside_vmap():
    def f(lib, g):
        z = lib.zeros(5, requires_grad=True)
        s = lib.zeros(5)
        s.requires_grad = True
        prm = lib.nn.Parameter(lib.ones(5))
        gr = lib.func.grad(lambda y: (y * y * prm).sum())(g)
        tangent = lib.func.jvp(lambda y: y.exp(), (g,), (g,))[1]
        return z.detach() + s.detach() + gr + tangent
    want = torch.func.vmap(lambda g: f(torch, g))(torch.tensor(X)).detach().numpy()
    got = ember.func.vmap(lambda g: f(ember, g))(ember.tensor(X)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # outside vmap the method works as before
    assert ember.zeros(2).requires_grad_().requires_grad


def test_requires_grad_method_inside_vmap_then_outside():
    x = ember.tensor(X)
    with pytest.raises(RuntimeError):
        ember.func.vmap(lambda g: g.requires_grad_())(x)
    # a refused call leaves no vmap state behind
    assert ember.zeros(2).requires_grad_(True).requires_grad
