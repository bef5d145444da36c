"""torch.nn.grad (conv gradients w.r.t. input and weight) and torch.nn.common_types, vs torch."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(3)


@pytest.mark.parametrize("n,kw", [(1, dict(stride=2, padding=1)), (2, dict(dilation=2)),
                                  (2, dict(stride=(2, 1), padding=(1, 0), groups=2)),
                                  (3, dict(padding=1))])
def test_conv_input_and_weight_grads(n, kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 4) + (7,) * n)
    w = rng.standard_normal((6, 4 // groups) + (3,) * n)
    res = []
    for lib in (torch, ember):
        conv = getattr(lib.nn.functional, f"conv{n}d")
        out = conv(lib.tensor(x), lib.tensor(w), None, **kw)
        go = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))
        gi = getattr(lib.nn.grad, f"conv{n}d_input")(x.shape, lib.tensor(w), go, **kw)
        gw = getattr(lib.nn.grad, f"conv{n}d_weight")(lib.tensor(x), w.shape, go, **kw)
        res.append((gi.detach().numpy(), gw.detach().numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)


def test_input_grad_is_differentiable():
    w = ember.randn(3, 2, 3, requires_grad=True)
    go = ember.randn(1, 3, 6)
    gi = ember.nn.grad.conv1d_input((1, 2, 8), w, go)
    gi.sum().backward()
    assert w.grad is not None and w.grad.shape == w.shape


def test_common_types():
    from ember.nn import common_types as ct
    assert ct._size_2_t == ct._scalar_or_tuple_2_t[int]
    assert set(n for n in dir(torch.nn.common_types) if n.startswith("_") and
               not n.startswith("__")) - {"_TypeAlias"} <= set(dir(ct))


class _Ops(ember.DispatchMode):
    def __init__(self):
        self.seen = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.seen.append(getattr(op, "base", op).name)
        return op(*args, **kwargs)


@pytest.mark.parametrize("which", ["input", "weight"])
def test_one_convolution_backward_and_no_forward(which):
    x, w = ember.randn(2, 3, 9, 8), ember.randn(4, 3, 3, 3)
    go = ember.randn(2, 4, 5, 4)
    mode = _Ops()
    with mode:
        if which == "input":
            r = ember.nn.grad.conv2d_input(x.shape, w, go, stride=2, padding=1)
        else:
            r = ember.nn.grad.conv2d_weight(x, w.shape, go, stride=2, padding=1)
    assert "convolution_backward" in mode.seen and "convolution" not in mode.seen
    tx, tw = torch.from_numpy(x.numpy()), torch.from_numpy(w.numpy())
    tgo = torch.from_numpy(go.numpy())
    want = torch.nn.grad.conv2d_input(tx.shape, tw, tgo, 2, 1) if which == "input" else \
        torch.nn.grad.conv2d_weight(tx, tw.shape, tgo, 2, 1)
    np.testing.assert_allclose(r.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.grad.conv2d_input((2, 5, 9, 8), lib.ones(4, 3, 3, 3), lib.ones(2, 4, 7, 6)),
    lambda lib: lib.nn.grad.conv2d_weight(lib.ones(2, 3, 9, 8), (4, 3, 3, 3),
                                          lib.ones(2, 4, 7, 6, 1)),
    lambda lib: lib.nn.grad.conv1d_input((3, 9), lib.ones(4, 3, 3), lib.ones(4, 7)),
    lambda lib: lib.nn.grad.conv2d_input((2, 3, 9, 8), lib.ones(4, 3, 3, 3),
                                         lib.ones(2, 4, 9, 8), padding="same"),
    lambda lib: lib.nn.grad.conv2d_input((2, 3, 9, 8), lib.ones(4, 2, 3, 3),
                                         lib.ones(2, 4, 7, 6), groups=2),
])
def test_bad_arguments_raise_as_torch(call):
    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(type(t.value)):
        call(ember)
