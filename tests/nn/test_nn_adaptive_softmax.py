"""AdaptiveLogSoftmaxWithLoss against torch: outputs, loss, gradients, log_prob, predict,
unbatched input and errors."""
import numpy as np
import pytest
import torch

import ember


def _pair(head_bias=False, div_value=4.0):
    torch.manual_seed(0)
    mt = torch.nn.AdaptiveLogSoftmaxWithLoss(64, 20, [4, 9, 15], div_value=div_value,
                                             head_bias=head_bias)
    me = ember.nn.AdaptiveLogSoftmaxWithLoss(64, 20, [4, 9, 15], div_value=div_value,
                                             head_bias=head_bias)
    assert list(me.state_dict()) == list(mt.state_dict())
    me.load_state_dict({k: ember.tensor(v.numpy()) for k, v in mt.state_dict().items()})
    return mt, me


@pytest.mark.parametrize("head_bias,div_value", [(False, 4.0), (True, 2.0)])
def test_forward_backward_match_torch(head_bias, div_value):
    mt, me = _pair(head_bias, div_value)
    x = torch.randn(12, 64, requires_grad=True)
    target = torch.tensor([0, 3, 4, 8, 9, 14, 15, 19, 1, 10, 16, 5])
    xe = ember.tensor(x.detach().numpy(), requires_grad=True)
    ot, oe = mt(x, target), me(xe, ember.tensor(target.numpy()))
    assert type(oe).__name__ == "_ASMoutput" and oe._fields == ("output", "loss")
    np.testing.assert_allclose(oe.output.detach().numpy(), ot.output.detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(oe.loss.item(), ot.loss.item(), rtol=1e-5)
    ot.loss.backward()
    oe.loss.backward()
    np.testing.assert_allclose(xe.grad.numpy(), x.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (n, pt), (_, pe) in zip(mt.named_parameters(), me.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=n)


def test_log_prob_predict_and_unbatched():
    mt, me = _pair()
    x = torch.randn(5, 64)
    xe = ember.tensor(x.numpy())
    lp = me.log_prob(xe)
    np.testing.assert_allclose(lp.detach().numpy(), mt.log_prob(x).detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(lp.exp().sum(1).detach().numpy(), np.ones(5), rtol=1e-5)
    assert me.predict(xe).tolist() == mt.predict(x).tolist()
    one_t, one_e = mt(x[0], torch.tensor(17)), me(xe[0], ember.tensor(17))
    assert one_e.output.dim() == 0
    np.testing.assert_allclose(one_e.output.item(), one_t.output.item(), rtol=1e-5)
    for lib, xx in ((torch, x), (ember, xe)):  # log_prob takes batches only, as in torch
        with pytest.raises(IndexError):
            (mt if lib is torch else me).log_prob(xx[0])


def test_errors_like_torch():
    for lib in (torch, ember):
        for cutoffs in ([], [5, 3], [0, 4], [4, 20], [4, 4]):
            with pytest.raises(ValueError):
                lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs)
        m = lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3])
        with pytest.raises(RuntimeError, match="Target values should be in"):
            m(lib.randn(2, 8), lib.tensor([1, 10]))
        with pytest.raises(RuntimeError, match="same size in the batch"):
            m(lib.randn(3, 8), lib.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="0D or 1D target"):
            m(lib.randn(2, 8), lib.tensor([[1, 2]]))
        with pytest.raises(RuntimeError, match="0D target tensor expects 1D"):
            m(lib.randn(2, 8), lib.tensor(1))
