"""Tensor arguments no gradient flows to: torch refuses them with requires_grad in grad mode
(and accepts them under no_grad); ember raises the same RuntimeError, never silently drops
the gradient."""
import pytest
import torch

import ember


def _cases(lib):
    F = lib.nn.functional
    g = dict(requires_grad=True)
    a = lib.tensor([[2.0, 1.0], [1.0, 3.0]], **g)
    tol = lib.tensor(0.1, **g)
    x43 = lib.tensor([[0.1, 0.2, 0.3]] * 4, **g)
    cls = lib.tensor([0, 1, 2, 0])
    return {
        "pinv atol": lambda: lib.linalg.pinv(a, atol=tol),
        "pinv rtol": lambda: lib.linalg.pinv(a.detach(), rtol=tol),
        "batch_norm running_mean": lambda: F.batch_norm(
            x43, lib.zeros(3, **g), lib.ones(3), training=True),
        "batch_norm eval running_var": lambda: F.batch_norm(
            x43, lib.zeros(3), lib.ones(3, **g), training=False),
        "instance_norm running_mean": lambda: F.instance_norm(
            lib.ones(2, 3, 4).cumsum(2), lib.zeros(3, **g), lib.ones(3)),
        "nll_loss weight": lambda: F.nll_loss(x43, cls, weight=lib.ones(3, **g)),
        "cross_entropy weight": lambda: F.cross_entropy(x43, cls, weight=lib.ones(3, **g)),
        "binary_cross_entropy weight": lambda: F.binary_cross_entropy(
            x43.sigmoid(), lib.ones(4, 3) / 2, weight=lib.ones(3, **g)),
        "bce_with_logits weight": lambda: F.binary_cross_entropy_with_logits(
            x43, lib.ones(4, 3) / 2, weight=lib.ones(3, **g)),
        "bce_with_logits pos_weight": lambda: F.binary_cross_entropy_with_logits(
            x43, lib.ones(4, 3) / 2, pos_weight=lib.ones(3, **g)),
        "multi_margin_loss weight": lambda: F.multi_margin_loss(x43, cls,
                                                                weight=lib.ones(3, **g)),
        "soft_margin_loss target": lambda: F.soft_margin_loss(x43, lib.ones(4, 3, **g)),
    }


@pytest.mark.parametrize("name", sorted(_cases(torch)))
def test_refused_like_torch(name):
    with pytest.raises(RuntimeError) as t:
        _cases(torch)[name]()
    assert "is not differentiable with respect to argument" in str(t.value)
    with pytest.raises(RuntimeError) as e:
        _cases(ember)[name]()
    assert str(e.value) == str(t.value)


@pytest.mark.parametrize("name", sorted(_cases(torch)))
def test_accepted_under_no_grad(name):
    with torch.no_grad():
        t = _cases(torch)[name]()
    with ember.no_grad():
        e = _cases(ember)[name]()
    torch.testing.assert_close(torch.from_numpy(e.detach().numpy().copy()), t)


def test_cross_entropy_probability_weight_still_differentiable():
    # class-probability targets are computed by a composite: torch lets the weight get grad
    for lib in (torch, ember):
        w = lib.ones(3, requires_grad=True)
        lib.nn.functional.cross_entropy(lib.zeros(2, 3), lib.ones(2, 3) / 3, weight=w).backward()
        assert w.grad is not None
