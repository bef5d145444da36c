"""ctc_loss under vmap with per-example lengths (batched length tensors) and its
per-example gradients, against a loop of torch's ctc_loss; its second derivative raises
as torch's does."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(7)
LP = RNG.standard_normal((3, 6, 2, 5))
IN_LENS = np.array([[6, 5], [5, 6], [6, 4]])
PADDED = (RNG.integers(1, 5, (3, 2, 3)), np.array([[3, 2], [2, 3], [3, 1]]))
# concatenated targets: each example's lengths sum to the targets' length, as torch requires
CONCAT = (RNG.integers(1, 5, (3, 5)), np.array([[3, 2], [2, 3], [4, 1]]))


def _loss(lib, reduction):
    def f(lp, targets, il, tl):
        return lib.nn.functional.ctc_loss(lp.log_softmax(-1), targets, il, tl,
                                          reduction=reduction)
    return f


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets, tgt_lens", [PADDED, CONCAT], ids=["padded", "concatenated"])
def test_vmap_over_per_example_lengths_matches_torch_loop(reduction, targets, tgt_lens):
    arrays = (LP, targets, IN_LENS, tgt_lens)
    t_args = [torch.tensor(a) for a in arrays]
    want, want_grad = [], []
    for i in range(3):
        lp = t_args[0][i].clone().requires_grad_(True)
        out = _loss(torch, reduction)(lp, *[a[i] for a in t_args[1:]])
        want.append(out.detach())
        want_grad.append(torch.autograd.grad(out.sum(), lp)[0])
    e_args = [ember.tensor(a) for a in arrays]
    f = _loss(ember, reduction)
    got = ember.func.vmap(f)(*e_args)
    got_grad = ember.func.vmap(ember.func.grad(lambda *a: f(*a).sum()))(*e_args)
    np.testing.assert_allclose(got.numpy(), torch.stack(want).numpy(), rtol=1e-10)
    np.testing.assert_allclose(got_grad.numpy(), torch.stack(want_grad).numpy(), rtol=1e-8,
                               atol=1e-12)


def test_vmap_checks_each_examples_lengths():
    bad = IN_LENS.copy()
    bad[2, 0] = 7  # longer than the 6 time steps
    args = [ember.tensor(a) for a in (LP, PADDED[0], bad, PADDED[1])]
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6"):
        ember.func.vmap(_loss(ember, "mean"))(*args)


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_second_derivative_raises(lib):
    lp = lib.tensor(LP[0]).log_softmax(-1).requires_grad_(True)
    loss = lib.nn.functional.ctc_loss(lp, lib.tensor(PADDED[0][0]), [6, 5], [3, 2],
                                      reduction="sum")
    g, = lib.autograd.grad(loss, lp, create_graph=True)
    with pytest.raises(RuntimeError,
                       match="derivative for aten::_ctc_loss_backward is not implemented"):
        g.sum().backward()
