"""scaled_dot_product_attention (fused and blockwise paths) and MultiheadAttention vs torch."""
import time
import tracemalloc
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.ops.nn.attention as A
from nnutil import assert_close, check_fn, make_pair, np_of, run, same_error

rng = np.random.default_rng(0)


def sdpa(**kw):
    return lambda lib, q, k, v, *m: lib.nn.functional.scaled_dot_product_attention(q, k, v, *m,
                                                                                  **kw)


@pytest.fixture(params=["single", "blocks"])
def path(request, monkeypatch):
    """Run each case through the default kernels (C where a compiler is found) and through
    the NumPy ones with tiny blocks (online softmax)."""
    if request.param == "blocks":
        from ember._core import ckernels
        monkeypatch.setattr(ckernels, "ENABLED", False)
        monkeypatch.setattr(A, "SINGLE_BLOCK_SCORES", 0)
        monkeypatch.setattr(A, "BLOCK_Q", 3)
        monkeypatch.setattr(A, "BLOCK_K", 4)
        monkeypatch.setattr(A, "BLOCK_K_BACKWARD", 3)
    return request.param


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sdpa_matches_torch(path, dt):
    q = rng.standard_normal((2, 3, 7, 5)).astype(dt)
    k = rng.standard_normal((2, 3, 9, 5)).astype(dt)
    v = rng.standard_normal((2, 3, 9, 4)).astype(dt)
    check_fn(sdpa(), [q, k, v])
    check_fn(sdpa(is_causal=True), [q, k, v])
    check_fn(sdpa(is_causal=True), [k, q[:, :, :6], q[:, :, :6]])  # L > S
    check_fn(sdpa(scale=0.3), [q, k[:1], v[:1]])  # broadcast batch dims
    check_fn(sdpa(), [q[0, 0], k[0, 0], v[0, 0]])  # no batch dims
    bm = rng.random((7, 9)) > 0.3
    bm[2] = False  # a fully masked row gives zeros, like torch
    check_fn(sdpa(), [q, k, v, bm])
    fm = rng.standard_normal((3, 1, 9)).astype(dt)  # float mask broadcast over rows, with grad
    check_fn(sdpa(), [q, k, v, fm])


def test_sdpa_matches_naive_formula(path):
    q, k, v = (rng.standard_normal((2, 11, 4)) for _ in range(3))
    m = np.triu(np.full((11, 11), -np.inf), 1)
    s = q @ k.transpose(0, 2, 1) / 2.0 + m
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v
    out = ember.nn.functional.scaled_dot_product_attention(
        *(ember.from_numpy(a) for a in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(out.numpy(), ref, atol=1e-12)


def test_sdpa_gqa_and_half():
    q = rng.standard_normal((1, 4, 5, 8)).astype(np.float64)
    k = rng.standard_normal((1, 2, 6, 8)).astype(np.float64)
    check_fn(sdpa(enable_gqa=True), [q, k, k])
    h = [rng.standard_normal((2, 5, 8)).astype(np.float16) for _ in range(3)]
    check_fn(sdpa(is_causal=True), h, grad=False, atol=2e-3, rtol=2e-3)


def test_sdpa_double_backward():
    from ember.autograd import gradgradcheck
    ts = [ember.randn(2, 3, 2, dtype=ember.float64, requires_grad=True) for _ in range(3)]
    f = ember.nn.functional.scaled_dot_product_attention
    assert gradgradcheck(lambda q, k, v: f(q, k, v, is_causal=True), ts)


def test_sdpa_dropout():
    f = ember.nn.functional.scaled_dot_product_attention
    q = ember.randn(2, 4, 8)
    assert f(q, q, q, dropout_p=1.0).abs().sum().item() == 0
    ember.manual_seed(0)
    a = f(q, q, q, dropout_p=0.5)
    assert a.shape == (2, 4, 8) and not np.allclose(a.numpy(), f(q, q, q).numpy())


ERRORS = [
    lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.randn(2, 3, 4), lib.randn(2, 5, 4), lib.randn(2, 5, 4),
        attn_mask=lib.ones(3, 5, dtype=lib.bool), is_causal=True),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.randn(2, 3, 4), lib.randn(2, 5, 4).double(), lib.randn(2, 5, 4)),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.randn(2, 3, 4), lib.randn(2, 5, 3), lib.randn(2, 5, 4)),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.randn(2, 3, 4), lib.randn(2, 5, 4), lib.randn(2, 4, 4)),
    lambda lib: lib.nn.functional.scaled_dot_product_attention(
        lib.randn(2, 3, 4), lib.randn(2, 5, 4), lib.randn(2, 5, 4),
        attn_mask=lib.ones(3, 5, dtype=lib.int64)),
    lambda lib: lib.nn.MultiheadAttention(0, 2),
    lambda lib: lib.nn.MultiheadAttention(4, 2)(lib.randn(3, 2, 4), lib.randn(3, 2, 4),
                                                lib.randn(3, 2, 4), attn_mask=lib.zeros(3, 4)),
    lambda lib: lib.nn.MultiheadAttention(4, 2)(lib.randn(3, 2, 4), lib.randn(3, 2, 4),
                                                lib.randn(3, 2, 4), attn_mask=lib.zeros(2, 3, 3)),
    lambda lib: lib.nn.MultiheadAttention(4, 2)(lib.randn(3, 2, 4), lib.randn(3, 2, 4),
                                                lib.randn(3, 2, 4), is_causal=True),
]


@pytest.mark.parametrize("fn", ERRORS)
def test_errors(fn):
    te, ee = same_error(fn)
    if "dtype" in str(te) or "is_causal" in str(te):
        assert str(ee) == str(te)


def test_sdpa_long_causal_memory_and_speed():
    """(1, 4, 4096, 64) causal: never allocates the L x L scores; report time vs torch."""
    q, k, v = (rng.standard_normal((1, 4, 4096, 64)).astype(np.float32) for _ in range(3))
    e = [ember.from_numpy(a) for a in (q, k, v)]
    t = [torch.from_numpy(a) for a in (q, k, v)]
    f = ember.nn.functional.scaled_dot_product_attention
    tracemalloc.start()
    out = f(*e, is_causal=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    scores_bytes = 4 * 4096 * 4096 * 4
    t0 = time.perf_counter()
    f(*e, is_causal=True)
    te = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = torch.nn.functional.scaled_dot_product_attention(*t, is_causal=True)
    tt = time.perf_counter() - t0
    print(f"sdpa causal (1,4,4096,64): peak {peak / 1e6:.1f} MB "
          f"({peak / scores_bytes:.3f} of L*L), {te * 1e3:.0f} ms vs torch {tt * 1e3:.0f} ms")
    assert peak < scores_bytes / 4
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=2e-5)


def test_sdpa_long_backward_blockwise():
    q, k, v = (rng.standard_normal((1, 1, 1500, 8)) for _ in range(3))
    check_fn(sdpa(is_causal=True), [q, k, v])


# ---- MultiheadAttention ---------------------------------------------------------------------

def _compare(tm, em, inputs, call):
    res = []
    for lib, m in ((ember, em), (torch, tm)):
        m.zero_grad()
        res.append(run(lib, lambda *a: call(lib, m, *a), inputs) + (dict(m.named_parameters()),))
    (eo, eg, _, ep), (to, tg, _, tp) = res
    assert len(eo) == len(to)
    for i, (a, b) in enumerate(zip(eo + eg, to + tg)):
        assert_close(a, b, f"output/grad {i}")
    for k in tp:
        assert_close(np_of(ep[k].grad) if ep[k].grad is not None else None,
                     np_of(tp[k].grad) if tp[k].grad is not None else None, k)


MHA_CONFIGS = [dict(), dict(add_bias_kv=True, add_zero_attn=True), dict(kdim=3, vdim=5),
               dict(bias=False), dict(batch_first=True)]


@pytest.mark.parametrize("kw", MHA_CONFIGS, ids=str)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_mha(kw, dt):
    tm, em = make_pair("MultiheadAttention", 8, 2, dtype=dt, **kw)
    x = rng.standard_normal((5, 3, 8)).astype(dt)
    kk = rng.standard_normal((7, 3, kw.get("kdim", 8))).astype(dt)
    vv = rng.standard_normal((7, 3, kw.get("vdim", 8))).astype(dt)
    kpm = rng.random((3, 7)) > 0.7
    kpm[:, 0] = False
    am = rng.standard_normal((5, 7)).astype(dt)
    if kw.get("batch_first"):
        x, kk, vv = (np.ascontiguousarray(a.transpose(1, 0, 2)) for a in (x, kk, vv))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: mismatched key_padding_mask/attn_mask types
        for nw in (True, False):
            _compare(tm, em, [x, kk, vv], lambda lib, m, q, k, v: m(
                q, k, v, need_weights=nw, average_attn_weights=False))
            _compare(tm, em, [x, kk, vv, kpm, am], lambda lib, m, q, k, v, kp, a: m(
                q, k, v, key_padding_mask=kp, attn_mask=a, need_weights=nw))
            if "kdim" in kw:
                continue
            _compare(tm, em, [x], lambda lib, m, q: m(q, q, q, need_weights=nw))
            _compare(tm, em, [x[0]], lambda lib, m, q: m(q, q, q, need_weights=nw))
            causal = np.triu(np.ones((5, 5), bool), 1)
            _compare(tm, em, [x, causal], lambda lib, m, q, c: m(
                q, q, q, attn_mask=c, need_weights=nw, is_causal=True))
            _compare(tm, em, [x, kk], lambda lib, m, q, k: m(q, k, k, need_weights=nw))


def test_mha_3d_mask_and_train_mode():
    tm, em = make_pair("MultiheadAttention", 8, 2, dtype=np.float64)
    x = rng.standard_normal((5, 3, 8))
    am = rng.standard_normal((6, 5, 5))
    _compare(tm, em, [x, am], lambda lib, m, q, a: m(q, q, q, attn_mask=a))
    tm.train(), em.train()  # dropout 0: train mode must match too
    _compare(tm, em, [x], lambda lib, m, q: m(q, q, q))


def test_mha_repr_and_state_dict():
    for kw in MHA_CONFIGS:
        tm, em = torch.nn.MultiheadAttention(8, 2, **kw), ember.nn.MultiheadAttention(8, 2, **kw)
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == list(tm.state_dict())
    em = ember.nn.MultiheadAttention(8, 2)
    assert np.all(em.in_proj_bias.detach().numpy() == 0)
