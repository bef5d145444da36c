"""ember.special beyond the op database: torch's missing derivatives raise at backward,
non-differentiable Bessel functions, argument type rules, Tensor methods."""
import numpy as np
import pytest
import torch

import ember


def _pair(lib, a, b, ga, gb):
    x = lib.tensor(a, dtype=lib.float64, requires_grad=ga)
    y = lib.tensor(b, dtype=lib.float64, requires_grad=gb)
    return x, y


@pytest.mark.parametrize("name,what", [("zeta", "zeta"), ("gammainc", "igamma: input"),
                                       ("gammaincc", "igammac: input")])
def test_missing_first_argument_derivative_raises_at_backward(name, what):
    for lib in (torch, ember):
        x, y = _pair(lib, [2.0, 3.0], [1.5, 2.5], True, False)
        out = getattr(lib.special, name)(x, y).sum()
        with pytest.raises(NotImplementedError, match=f"the derivative for '{what}' is not "):
            out.backward()
    # the second argument's derivative exists and matches torch
    grads = []
    for lib in (torch, ember):
        x, y = _pair(lib, [2.0, 3.0], [1.5, 2.5], False, True)
        getattr(lib.special, name)(x, y).sum().backward()
        grads.append(np.asarray(y.grad.numpy() if lib is torch else y.grad._data))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-10)


def test_bessel_outputs_carry_no_grad():
    for name in ("bessel_j0", "bessel_y1", "modified_bessel_k0", "airy_ai"):
        e = getattr(ember.special, name)(ember.tensor([0.5, 1.5], requires_grad=True))
        t = getattr(torch.special, name)(torch.tensor([0.5, 1.5], requires_grad=True))
        assert e.requires_grad == t.requires_grad == False  # noqa: E712


def test_gammainc_needs_tensors_like_torch():
    with pytest.raises(TypeError):
        torch.special.gammainc(torch.ones(2), 2.0)
    with pytest.raises(TypeError):
        ember.special.gammainc(ember.ones(2), 2.0)
    assert ember.special.xlog1py(2.0, ember.tensor([0.5])).dtype == ember.float32


def test_tensor_methods_and_out():
    x = ember.tensor([0.0, 0.5, 2.0])
    np.testing.assert_allclose(x.i0()._data, torch.tensor([0.0, 0.5, 2.0]).i0().numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.sinc()._data, torch.tensor([0.0, 0.5, 2.0]).sinc().numpy(),
                               atol=1e-7)
    out = ember.empty(3)
    assert ember.special.ndtr(x, out=out) is out
    np.testing.assert_allclose(out._data, torch.special.ndtr(torch.tensor([0.0, 0.5, 2.0])),
                               rtol=1e-6)
    np.testing.assert_allclose(x.igamma(ember.tensor(1.0))._data,
                               torch.tensor([0.0, 0.5, 2.0]).igamma(torch.tensor(1.0)).numpy())


def test_multigammaln_p_check_and_aliases():
    with pytest.raises(RuntimeError):
        ember.special.multigammaln(ember.ones(2) * 3, 0)
    assert ember.special.psi is ember.special.digamma
    assert ember.special.expit is ember.sigmoid and ember.special.gammaln is ember.lgamma
