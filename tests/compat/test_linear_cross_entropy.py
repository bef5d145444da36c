"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and LinearCrossEntropyOptions against
torch: values and gradients of the plain and chunked forms, K-dimensional losses, errors."""
import warnings

import numpy as np
import pytest

import ember

import torch


def E(t):
    return ember.tensor(t.detach().numpy())


def _case(g, N=7, I=5, C=6, out=(), probs=False, dtype=torch.float32):
    x = torch.randn(*((N, I) if N else (I,)), generator=g, dtype=dtype)
    w = torch.randn(C, *out, I, generator=g, dtype=dtype)
    b = torch.randn(C, *out, generator=g, dtype=dtype)
    tshape = ((N,) if N else ()) + tuple(out)
    if probs:
        t = torch.softmax(torch.randn(*((N,) if N else ()), C, *out, generator=g), 1 if N else 0)
    else:
        t = torch.randint(0, C, tshape, generator=g)
        if N:
            t.view(-1)[1] = 2
    return x, w, b, t


def _run(lib, x, w, b, t, grads=True, **kw):
    xs = [(E(a) if lib is ember else a.clone()).requires_grad_(grads) if a is not None
          and a.is_floating_point() else (E(a) if (lib is ember and a is not None) else a)
          for a in (x, w, b)]
    tt = E(t) if lib is ember else t
    kw = {k: (E(v) if lib is ember and hasattr(v, "detach") else v) for k, v in kw.items()}
    if lib is ember and "options" in kw and kw["options"] is not None:
        kw["options"] = ember.nn.LinearCrossEntropyOptions(
            **{f: getattr(kw["options"], f) for f in ("batch_chunk_size", "chunking_method")})
    out = lib.nn.functional.linear_cross_entropy(xs[0], xs[1], tt, linear_bias=xs[2], **kw)
    out.sum().backward()
    return out.detach().numpy(), [a.grad.numpy() for a in xs]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [None, 2])
@pytest.mark.parametrize("chunk", [None, 2, 3])
def test_plain_and_chunked_match_torch(reduction, weighted, ignore_index, chunk):
    g = torch.Generator().manual_seed(0)
    x, w, b, t = _case(g)
    kw = dict(reduction=reduction, ignore_index=ignore_index)
    if weighted:
        kw["weight"] = torch.rand(6, generator=g) + 0.5
    if chunk is not None:
        kw["options"] = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    o_t, g_t = _run(torch, x, w, b, t, **kw)
    o_e, g_e = _run(ember, x, w, b, t, **kw)
    np.testing.assert_allclose(o_e, o_t, rtol=1e-5, atol=1e-5)
    for a, c in zip(g_e, g_t):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [dict(out=(3,)), dict(out=(2, 2)), dict(N=0),
                                  dict(probs=True), dict(N=0, probs=True)])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_k_dimensional_unbatched_and_probabilities(case, label_smoothing):
    g = torch.Generator().manual_seed(1)
    x, w, b, t = _case(g, **case)
    o_t, g_t = _run(torch, x, w, b, t, label_smoothing=label_smoothing)
    o_e, g_e = _run(ember, x, w, b, t, label_smoothing=label_smoothing)
    np.testing.assert_allclose(o_e, o_t, rtol=1e-5, atol=1e-5)
    for a, c in zip(g_e, g_t):
        np.testing.assert_allclose(a, c, rtol=1e-4, atol=1e-5)


def test_options_fall_back_with_torchs_warning():
    g = torch.Generator().manual_seed(2)
    x, w, b, t = _case(g, out=(3,))
    msgs = []
    for lib in (torch, ember):
        xs = (x, w, b, t) if lib is torch else tuple(E(a) for a in (x, w, b, t))
        with pytest.warns(UserWarning, match="options`` ignored") as rec:
            lib.nn.functional.linear_cross_entropy(
                xs[0], xs[1], xs[3], linear_bias=xs[2],
                options=lib.nn.LinearCrossEntropyOptions())
        msgs.append(str(rec[0].message).replace("torch.", "").replace("ember.", ""))
    assert msgs[0] == msgs[1]


def test_errors_match_torch():
    g = torch.Generator().manual_seed(3)
    x, w, b, t = _case(g)
    F, Fe = torch.nn.functional.linear_cross_entropy, ember.nn.functional.linear_cross_entropy
    cases = [
        ((x[None], w, t), {}), ((x, w[0], t), {}), ((x, w[:, :4], t), {}),
        ((x, w, t), {"linear_bias": b[:3]}), ((x[0], torch.randn(6, 2, 5), t[0]), {}),
        ((x, w, torch.softmax(torch.randn(7, 6), 1)), {"ignore_index": 1}),
    ]
    for args, kw in cases:
        with pytest.raises(RuntimeError) as rt:
            F(*args, **kw)
        with pytest.raises(RuntimeError) as re_:
            Fe(*(E(a) for a in args), **{k: E(v) if hasattr(v, "detach") else v
                                         for k, v in kw.items()})
        assert str(re_.value) == str(rt.value)
    for bad in (dict(acc_policy="x"), dict(chunking_method="rows:2"),
                dict(batch_chunk_size=0), dict(acc_dtype=torch.int32)):
        with pytest.raises(ValueError) as rt:
            torch.nn.LinearCrossEntropyOptions(**bad)
        eb = {k: (ember.int32 if v is torch.int32 else v) for k, v in bad.items()}
        with pytest.raises(ValueError) as re_:
            ember.nn.LinearCrossEntropyOptions(**eb)
        assert str(re_.value).replace("ember", "torch") == str(rt.value)


@pytest.mark.parametrize("kw", [dict(), dict(bias=True, out_features=(2,)),
                                dict(bias=True, reduction="sum", ignore_index=1)])
def test_module(kw):
    torch.manual_seed(4)
    m_t = torch.nn.LinearCrossEntropyLoss(5, 4, **kw)
    m_e = ember.nn.LinearCrossEntropyLoss(5, 4, **kw)
    m_e.load_state_dict({k: E(v) for k, v in m_t.state_dict().items()})
    assert repr(m_e) == repr(m_t)
    assert [n for n, _ in m_e.named_parameters()] == [n for n, _ in m_t.named_parameters()]
    g = torch.Generator().manual_seed(5)
    x = torch.randn(6, 5, generator=g)
    t = torch.randint(0, 4, (6,) + tuple(kw.get("out_features", ())), generator=g)
    np.testing.assert_allclose(m_e(E(x), E(t)).detach().numpy(),
                               m_t(x, t).detach().numpy(), rtol=1e-5, atol=1e-6)
    for bad in (dict(weight=torch.ones(3)), dict(label_smoothing=1.5)):
        with pytest.raises(RuntimeError) as rt:
            torch.nn.LinearCrossEntropyLoss(5, 4, **bad)
        with pytest.raises(RuntimeError) as re_:
            ember.nn.LinearCrossEntropyLoss(5, 4, **{k: E(v) if hasattr(v, "detach") else v
                                                     for k, v in bad.items()})
        assert str(re_.value) == str(rt.value)
    warnings.simplefilter("default")
