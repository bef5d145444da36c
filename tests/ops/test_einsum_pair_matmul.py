"""Two-operand einsum as one batched matmul (ops.blas._einsum_pair): against torch for batch,
outer, inner, transposed and broadcast contractions, complex, halves and empty sizes, with
gradients; the cases it declines (repeated or privately summed letters) still agree."""
import numpy as np
import pytest
import torch

import ember
from ember.ops.blas import _einsum_pair

RNG = np.random.default_rng(0)
SIZES = {"b": 3, "h": 2, "i": 4, "j": 5, "k": 6, "l": 1}
EQS = ["bij,bjk->bik", "bij,bjk->bki", "ij,jk->ik", "ij,kj->ik", "i,i->", "i,j->ij",
       "bhij,bhkj->bhik", "ij,j->i", "bij,jk->bik", "ijk,ikl->jl", "ij,ij->ij", "kb,bi->ik",
       "bhi,bhi->bh", "bli,bij->blj"]


def _arr(term, dt):
    shape = [SIZES[c] for c in term]
    a = RNG.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dt)


@pytest.mark.parametrize("eq", EQS)
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex128])
def test_pairs_against_torch(eq, dt):
    ta, tb = eq.split("->")[0].split(",")
    a, b = _arr(ta, dt), _arr(tb, dt)
    assert _einsum_pair(eq, [a, b]) is not None
    res = {}
    g = None
    for lib in (torch, ember):
        x, y = lib.from_numpy(a).requires_grad_(), lib.from_numpy(b).requires_grad_()
        r = lib.einsum(eq, x, y)
        if g is None:
            g = RNG.standard_normal(tuple(r.shape)).astype(np.float64)
        if dt == np.complex128:
            (r.real * lib.from_numpy(g)).sum().backward()
        else:
            r.backward(lib.from_numpy(g.astype(dt)))
        res[lib] = (r.detach().numpy(), x.grad.numpy(), y.grad.numpy())
    tol = 2e-5 if dt == np.float32 else 1e-12
    for e, t in zip(res[ember], res[torch]):
        assert e.dtype == t.dtype and e.shape == t.shape
        np.testing.assert_allclose(e, t, rtol=tol, atol=tol)


def test_broadcast_half_empty_and_declined():
    a, b = RNG.standard_normal((1, 4, 5)), RNG.standard_normal((3, 5, 2))
    for lib_dt in ("float16", "bfloat16", "float32"):
        e = ember.einsum("bij,bjk->bik", ember.from_numpy(a).to(getattr(ember, lib_dt)),
                         ember.from_numpy(b).to(getattr(ember, lib_dt)))
        t = torch.einsum("bij,bjk->bik", torch.from_numpy(a).to(getattr(torch, lib_dt)),
                         torch.from_numpy(b).to(getattr(torch, lib_dt)))
        assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=1e-2, atol=1e-2)
    z = ember.einsum("bij,bjk->bik", ember.zeros(2, 3, 0), ember.zeros(2, 0, 4))
    assert tuple(z.shape) == (2, 3, 4) and not z.numpy().any()
    assert _einsum_pair("ii,ij->j", [np.eye(3), np.ones((3, 2))]) is None
    assert _einsum_pair("ij,jk->k", [np.ones((3, 2)), np.ones((2, 2))]) is None
    for eq, x, y in (("ii,ij->j", RNG.standard_normal((3, 3)), RNG.standard_normal((3, 2))),
                     ("ij,jk->k", RNG.standard_normal((3, 2)), RNG.standard_normal((2, 4)))):
        e = ember.einsum(eq, ember.from_numpy(x), ember.from_numpy(y))
        t = torch.einsum(eq, torch.from_numpy(x), torch.from_numpy(y))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
