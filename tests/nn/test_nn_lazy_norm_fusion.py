"""LazyBatchNorm/LazyInstanceNorm, gumbel_softmax, BN fusion, skip_init, conv weight
memory formats and nn.factory_kwargs, against torch."""
import numpy as np
import pytest
import torch

import ember


def _t(x):
    return ember.tensor(x.detach().numpy())


@pytest.mark.parametrize("name,shape", [("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm1d", (4, 3, 5)),
                                        ("LazyBatchNorm2d", (2, 3, 4, 4)),
                                        ("LazyBatchNorm3d", (2, 3, 2, 3, 2)),
                                        ("LazyInstanceNorm1d", (2, 3, 6)),
                                        ("LazyInstanceNorm2d", (2, 3, 4, 5)),
                                        ("LazyInstanceNorm3d", (2, 3, 2, 3, 4))])
def test_lazy_norm_matches_torch(name, shape):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    mt, me = getattr(torch.nn, name)(), getattr(ember.nn, name)()
    assert me.has_uninitialized_params() and isinstance(me.weight, ember.nn.UninitializedParameter)
    assert isinstance(me.running_mean, ember.nn.UninitializedBuffer)
    yt, ye = mt(x), me(_t(x))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert type(me).__name__ == type(mt).__name__  # became the eager class
    assert list(me.state_dict()) == list(mt.state_dict())
    for k, v in mt.state_dict().items():
        np.testing.assert_allclose(me.state_dict()[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-6)
    mt.eval(), me.eval()
    np.testing.assert_allclose(me(_t(x)).detach().numpy(), mt(x).detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_lazy_batchnorm_options_and_load_state_dict():
    me = ember.nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
    assert me.weight is None and me.running_mean is None
    mt = torch.nn.LazyBatchNorm2d(affine=False, track_running_stats=False)
    me(ember.randn(2, 4, 3, 3)), mt(torch.randn(2, 4, 3, 3))
    # nothing to infer: torch leaves num_features at 0 too
    assert type(me) is ember.nn.BatchNorm2d and me.num_features == mt.num_features == 0
    src = ember.nn.BatchNorm1d(5)
    src.running_mean.fill_(2.0)
    lazy = ember.nn.LazyBatchNorm1d()
    lazy.load_state_dict(src.state_dict())
    assert lazy.running_mean.tolist() == [2.0] * 5
    nb = ember.nn.LazyBatchNorm1d(bias=False)
    assert nb.bias is None
    nb(ember.randn(3, 2))
    assert nb.weight.shape == (2,) and nb.bias is None
    with pytest.raises(RuntimeError):
        ember.nn.UninitializedBuffer().shape


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_same_samples_and_grads(hard):
    torch.manual_seed(3), ember.manual_seed(3)
    lt = torch.randn(4, 6, requires_grad=True)
    le = ember.randn(4, 6, requires_grad=True)
    yt = torch.nn.functional.gumbel_softmax(lt, tau=0.7, hard=hard, dim=0)
    ye = ember.nn.functional.gumbel_softmax(le, tau=0.7, hard=hard, dim=0)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = torch.arange(24.0).reshape(4, 6)
    (yt * w).sum().backward()
    (ye * _t(w)).sum().backward()
    np.testing.assert_allclose(le.grad.numpy(), lt.grad.numpy(), rtol=1e-4, atol=1e-5)
    if hard:
        assert ye.detach().sum(0).tolist() == [1.0] * 6
    with pytest.warns(UserWarning, match="deprecated"):
        ember.nn.functional.gumbel_softmax(le, eps=1e-5)


def _bn_eval(mod, n):
    mod.running_mean.uniform_(-1, 1)
    mod.running_var.uniform_(0.5, 2)
    mod.weight.data.uniform_(0.5, 1.5)
    mod.bias.data.uniform_(-1, 1)
    return mod.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval_matches_torch_and_unfused(transpose):
    torch.manual_seed(1)
    ct = (torch.nn.ConvTranspose2d(3, 4, 3) if transpose else torch.nn.Conv2d(3, 4, 3)).eval()
    bt = _bn_eval(torch.nn.BatchNorm2d(4), 4)
    ce = (ember.nn.ConvTranspose2d(3, 4, 3) if transpose else ember.nn.Conv2d(3, 4, 3)).eval()
    be = ember.nn.BatchNorm2d(4).eval()
    ce.load_state_dict({k: _t(v) for k, v in ct.state_dict().items()})
    be.load_state_dict({k: _t(v) for k, v in bt.state_dict().items()})
    ft = torch.nn.utils.fuse_conv_bn_eval(ct, bt, transpose)
    fe = ember.nn.utils.fuse_conv_bn_eval(ce, be, transpose)
    assert isinstance(fe.weight, ember.nn.Parameter) and fe is not ce
    np.testing.assert_allclose(fe.weight.detach().numpy(), ft.weight.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(fe.bias.detach().numpy(), ft.bias.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    x = ember.randn(2, 3, 6, 6)
    np.testing.assert_allclose(fe(x).detach().numpy(), be(ce(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        ember.nn.utils.fuse_conv_bn_eval(ce.train(), be)


def test_fuse_linear_bn_and_weights_without_bias():
    torch.manual_seed(2)
    lt, bt = torch.nn.Linear(5, 3).eval(), _bn_eval(torch.nn.BatchNorm1d(3), 3)
    le, be = ember.nn.Linear(5, 3).eval(), ember.nn.BatchNorm1d(3).eval()
    le.load_state_dict({k: _t(v) for k, v in lt.state_dict().items()})
    be.load_state_dict({k: _t(v) for k, v in bt.state_dict().items()})
    ft, fe = torch.nn.utils.fuse_linear_bn_eval(lt, bt), ember.nn.utils.fuse_linear_bn_eval(le, be)
    np.testing.assert_allclose(fe.weight.detach().numpy(), ft.weight.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(fe.bias.detach().numpy(), ft.bias.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(AssertionError, match="out_features"):
        ember.nn.utils.fuse_linear_bn_eval(le, ember.nn.BatchNorm1d(4).eval())
    args_t = (lt.weight, None, bt.running_mean, bt.running_var, 1e-3, bt.weight, bt.bias)
    wt, bt2 = torch.nn.utils.fuse_linear_bn_weights(*args_t)
    we, be2 = ember.nn.utils.fuse_linear_bn_weights(*[_t(a) if isinstance(a, torch.Tensor) else a
                                                      for a in args_t])
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(be2.detach().numpy(), bt2.detach().numpy(), rtol=1e-5, atol=1e-6)
    cw = torch.randn(4, 2, 3, 3, dtype=torch.float64)
    rm, rv = torch.randn(4), torch.rand(4) + 0.5
    wt, bt3 = torch.nn.utils.fuse_conv_bn_weights(cw, None, rm, rv, 1e-5, None, None)
    we, be3 = ember.nn.utils.fuse_conv_bn_weights(_t(cw), None, _t(rm), _t(rv), 1e-5, None, None)
    assert we.dtype == ember.float64 and be3.dtype == ember.float64
    np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(be3.detach().numpy(), bt3.detach().numpy(), rtol=1e-6)


def test_skip_init_and_memory_format():
    m = ember.nn.utils.skip_init(ember.nn.Linear, 3, 4, bias=False)
    assert type(m) is ember.nn.Linear and m.weight.shape == (4, 3) and m.bias is None

    class NoDevice(ember.nn.Module):
        def __init__(self, n):
            super().__init__()

    with pytest.raises(RuntimeError, match="device"):
        ember.nn.utils.skip_init(NoDevice, 2)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        ember.nn.utils.skip_init(int)
    net = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.Sequential(ember.nn.Conv3d(1, 2, 1)))
    before = net[0].weight.detach().clone()
    assert ember.nn.utils.convert_conv2d_weight_memory_format(net, ember.channels_last) is net
    assert net[0].weight.is_contiguous(memory_format=ember.channels_last)
    assert ember.equal(net[0].weight.detach(), before)
    assert ember.nn.utils.convert_conv3d_weight_memory_format(net, ember.channels_last_3d) is net


def test_factory_kwargs_like_torch():
    for kw in (None, {}, {"device": "cpu"}, {"device": "cpu", "factory_kwargs": {"dtype": "x"}},
               {"factory_kwargs": {"bar": 1}}):
        assert ember.nn.factory_kwargs(kw) == torch.nn.factory_kwargs(kw)
    for bad in ({"foo": 1}, {"dtype": 1, "factory_kwargs": {"dtype": 2}}):
        with pytest.raises(TypeError):
            torch.nn.factory_kwargs(bad)
        with pytest.raises(TypeError):
            ember.nn.factory_kwargs(bad)
