"""linalg.det's backward is one operator (`_linalg_det_backward`): conj(det) A^{-H}, the
SVD formula for (near-)singular matrices, whatever the grad mode (torch switches formulas by
grad mode: its no-grad backward gives 0 at an exactly singular matrix, its create_graph and
torch.func ones the adjugate, which ember gives always); its own derivative is that of its
decomposition (issue 10)."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from test_grad_at_zeros import OpNames

MATS = {
    "regular": [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.5, 0.0, 1.0]],
    "rank2": [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]],
    "rank1_2x2": [[1.0, 2.0], [2.0, 4.0]],
    "batch": [[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]], [[0.0, 1.0], [-1.0, 0.5]]],
}


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("name", sorted(MATS))
@pytest.mark.parametrize("create_graph", [False, True])
def test_gradient_equals_torch_func(name, dtype, create_graph):
    m = np.array(MATS[name])
    if dtype == "complex128":
        m = m + 0.5j * np.roll(m, 1, -1)
    a = ember.tensor(m, dtype=getattr(ember, dtype), requires_grad=True)
    (g,) = ember.autograd.grad(ember.linalg.det(a).abs().sum(), a, create_graph=create_graph)
    t = torch.tensor(m, dtype=getattr(torch, dtype), requires_grad=True)
    # torch's create_graph backward takes the formulas of torch.func's
    (gt,) = torch.autograd.grad(torch.linalg.det(t).abs().sum(), t, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-10, atol=1e-10)


def test_gradcheck_and_gradgradcheck():
    for m in (MATS["regular"], MATS["batch"]):
        a = ember.tensor(m, dtype=ember.float64, requires_grad=True)
        assert gradcheck(ember.linalg.det, (a,)) and gradgradcheck(ember.linalg.det, (a,))


@pytest.mark.parametrize("name", ["regular", "rank2", "rank1_2x2"])
def test_hessians_equal_torch(name):
    a = ember.tensor(MATS[name], dtype=ember.float64)
    ht = torch.autograd.functional.hessian(torch.linalg.det,
                                           torch.tensor(MATS[name], dtype=torch.float64))
    hr = ember.func.jacrev(ember.func.jacrev(ember.linalg.det))(a)
    np.testing.assert_allclose(hr.numpy(), ht.numpy(), atol=1e-12)
    if name == "regular":  # forward over reverse at singular ones: svd's vjp tests values
        hf = ember.func.jacfwd(ember.func.jacrev(ember.linalg.det))(a)
        np.testing.assert_allclose(hf.numpy(), ht.numpy(), atol=1e-12)


def test_per_sample_gradients_equal_a_loop():
    a = ember.tensor(MATS["batch"], dtype=ember.float64)
    got = ember.func.vmap(ember.func.grad(ember.linalg.det))(a)
    for i in range(a.shape[0]):
        ai = a[i].detach().requires_grad_()
        (gi,) = ember.autograd.grad(ember.linalg.det(ai), ai)
        np.testing.assert_allclose(got[i].numpy(), gi.numpy(), rtol=1e-12)


def test_backward_runs_the_same_ops_with_and_without_a_graph():
    seqs = []
    for create_graph in (False, True):
        a = ember.tensor(MATS["batch"], dtype=ember.float64, requires_grad=True)
        y = ember.linalg.det(a).sum()
        with OpNames() as m:
            ember.autograd.grad(y, a, create_graph=create_graph)
        seqs.append(m.names)
    assert seqs[0] == seqs[1]
    assert "_linalg_det_backward" in seqs[0]
