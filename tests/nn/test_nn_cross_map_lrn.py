"""CrossMapLRN2d: torch's values (its legacy channel window), an exact gradient, errors."""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("channels", [1, 2, 5, 7])
@pytest.mark.parametrize("size,alpha,beta,k", [(1, 0.3, 0.5, 1), (3, 1e-2, 0.75, 1),
                                               (4, 0.5, 0.6, 2), (5, 1e-4, 0.75, 1)])
def test_forward_matches_torch(channels, size, alpha, beta, k):
    x = torch.randn(2, channels, 4, 5)
    yt = torch.nn.CrossMapLRN2d(size, alpha, beta, k)(x)
    ye = ember.nn.CrossMapLRN2d(size, alpha, beta, k)(ember.tensor(x.numpy()))
    np.testing.assert_allclose(ye.numpy(), yt.numpy(), rtol=1e-5, atol=1e-6)
    # it is not local_response_norm: channel 0 stays in the early windows
    if channels == 7 and size == 4:
        lrn = torch.nn.functional.local_response_norm(x, size, alpha, beta, k)
        assert not np.allclose(ye.numpy(), lrn.numpy(), atol=1e-3)


def test_gradient_is_exact():
    x = ember.randn(2, 4, 3, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.nn.CrossMapLRN2d(3, 0.5, 0.7, 2), (x,))
    assert ember.autograd.gradcheck(ember.nn.CrossMapLRN2d(1, 0.5, 0.7, 2), (x,))
    # torch's hand-written backward fails on this input; ember differentiates the forward
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    with pytest.raises(RuntimeError):
        torch.nn.CrossMapLRN2d(1, 0.5, 0.7, 2)(xt).sum().backward()


def test_errors_and_repr():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
            lib.nn.CrossMapLRN2d(3)(lib.randn(2, 3, 4))
    assert repr(ember.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3))
