"""SDPA through the C flash-attention kernels (ember._core.ckernels.attention) and through the
blocked NumPy fallback: values and gradients against torch, C against NumPy, gradcheck in
float64 through the C path, memory of long sequences."""
import os
import tracemalloc

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
import ember.ops.nn.attention as A
from ember._core import ckernels
from ember._core.ckernels import attention as CA
from ember.autograd import gradcheck, gradgradcheck
from nnutil import check_fn

rng = np.random.default_rng(7)
C_AVAILABLE = ckernels.status()["available"]
# CI has a C compiler, so there the compiled path is always tested (a build failure fails)
needs_c = pytest.mark.skipif(not C_AVAILABLE and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ckernels.status()['reason']}")


@pytest.fixture(params=[pytest.param("c", marks=needs_c), "numpy"])
def kernel(request, monkeypatch):
    """Each case through the C kernels and through the NumPy ones (small blocks, so the
    NumPy backward's block loop runs too)."""
    if request.param == "numpy":
        monkeypatch.setattr(ckernels, "ENABLED", False)
        monkeypatch.setattr(A, "SINGLE_BLOCK_SCORES", 0)
        monkeypatch.setattr(A, "BLOCK_Q", 16)
        monkeypatch.setattr(A, "BLOCK_K", 32)
        monkeypatch.setattr(A, "BLOCK_K_BACKWARD", 24)
    else:
        assert C_AVAILABLE, ckernels.status()["reason"]
    return request.param


def sdpa(**kw):
    return lambda lib, q, k, v, *m: lib.nn.functional.scaled_dot_product_attention(q, k, v, *m,
                                                                                  **kw)


def _qkv(dt, B=(2, 3), L=70, S=300, E=16, Ev=12):
    """L and S not multiples of any block size (query blocks 64, key blocks 256/128)."""
    return [rng.standard_normal(B + (n, e)).astype(dt) for n, e in ((L, E), (S, E), (S, Ev))]


TOL = {np.float32: dict(atol=2e-5, rtol=2e-4), np.float64: dict(atol=1e-10, rtol=1e-9)}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_plain_causal_scale(kernel, dt):
    q, k, v = _qkv(dt)
    check_fn(sdpa(), [q, k, v], **TOL[dt])
    check_fn(sdpa(is_causal=True, scale=0.7), [q, k, v], **TOL[dt])
    check_fn(sdpa(is_causal=True), [k[..., :280, :], q, q[..., :12]], **TOL[dt])  # L > S


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_masks_and_broadcasting(kernel, dt):
    q, k, v = _qkv(dt)
    bm = rng.random((70, 300)) > 0.4
    bm[5] = False                        # a fully masked row: zeros, like torch
    check_fn(sdpa(), [q, k, v, bm], **TOL[dt])
    fm = rng.standard_normal((3, 1, 300)).astype(dt)   # broadcast over rows, with its grad
    check_fn(sdpa(), [q, k, v, fm], **TOL[dt])
    fm2 = rng.standard_normal((2, 1, 70, 300)).astype(dt)  # broadcast over heads
    fm2[1, 0, 9] = -np.inf
    check_fn(sdpa(), [q, k, v, fm2], grad=(0, 1, 2), **TOL[dt])
    bcol = rng.random((70, 1)) > 0.2     # one column broadcast over all keys
    check_fn(sdpa(), [q, k, v, bcol], **TOL[dt])
    check_fn(sdpa(scale=0.3), [q, k[:1], v[:1]], **TOL[dt])     # k, v broadcast over batch
    check_fn(sdpa(), [q[0, 0], k[0, 0], v[0, 0]], **TOL[dt])   # no batch dims


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_odd_sizes(kernel, dt):
    for L, S in ((1, 1), (1, 300), (300, 1), (65, 257), (3, 5)):
        q, k, v = _qkv(dt, B=(2,), L=L, S=S, E=7, Ev=5)
        check_fn(sdpa(), [q, k, v], **TOL[dt])
        check_fn(sdpa(is_causal=True), [q, k, v], **TOL[dt])


@pytest.mark.parametrize("mask_shape", [None, (8, 70, 130), (2, 1, 70, 130), (70, 130),
                                        (1, 8, 70, 130)], ids=str)
def test_gqa_broadcasts_key_value_heads(kernel, mask_shape):
    """enable_gqa: query head h reads key/value head h // G, by broadcasting (no copies)."""
    q = rng.standard_normal((2, 8, 70, 16))
    k, v = (rng.standard_normal((2, 2, 130, 16)) for _ in range(2))
    if mask_shape is None:
        check_fn(sdpa(enable_gqa=True, is_causal=True), [q, k, v], **TOL[np.float64])
        check_fn(sdpa(enable_gqa=True), [q[0], k[0], v[0]], **TOL[np.float64])  # no batch
    else:
        m = rng.standard_normal(mask_shape)
        check_fn(sdpa(enable_gqa=True), [q, k, v, m], **TOL[np.float64])


def test_gqa_errors_like_torch():
    q = ember.randn(1, 6, 3, 4)
    k = ember.randn(1, 4, 5, 4)
    with pytest.raises(RuntimeError, match="number of heads"):
        ember.nn.functional.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    with pytest.raises(RuntimeError):
        torch.nn.functional.scaled_dot_product_attention(
            torch.randn(1, 6, 3, 4), torch.randn(1, 4, 5, 4), torch.randn(1, 4, 5, 4),
            enable_gqa=True)


def test_strided_inputs(kernel):

    def transposed(lib, q, k, v):   # (B, L, H, E) -> (B, H, L, E) views: strided rows
        f = lib.nn.functional.scaled_dot_product_attention
        return f(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
    qt, kt, vt = (rng.standard_normal((2, 90, 3, 16)) for _ in range(3))
    check_fn(transposed, [qt, kt, vt], **TOL[np.float64])


def _bf16_case(f, arrays):
    """Output and input gradients of ``f`` on bfloat16 tensors, in ember and torch."""
    e = [ember.from_numpy(a.astype(ml_dtypes.bfloat16)).requires_grad_(True) for a in arrays]
    t = [torch.from_numpy(a).to(torch.bfloat16).requires_grad_(True) for a in arrays]
    res = []
    for lib, xs in ((ember, e), (torch, t)):
        out = f(lib, *xs)
        out.float().sum().backward()
        res.append([out.float().detach().numpy()] + [x.grad.float().numpy() for x in xs])
    return res


def test_bfloat16(kernel):
    q, k, v = _qkv(np.float32, B=(1, 2), L=70, S=130)
    m = rng.standard_normal((70, 130)).astype(np.float32)
    for f, arrays in ((sdpa(is_causal=True), [q, k, v]), (sdpa(), [q, k, v, m])):
        mine, ref = _bf16_case(f, arrays)
        assert mine[0].dtype == np.float32
        for a, b in zip(mine, ref):
            np.testing.assert_allclose(a, b, atol=3e-2, rtol=3e-2)


def test_nan_inputs_propagate_like_torch(kernel):
    q, k, v = _qkv(np.float64, B=(1,), L=8, S=9, E=4, Ev=3)
    q[0, 2, 1] = np.nan
    check_fn(sdpa(), [q, k, v], grad=False)


@needs_c
@pytest.mark.parametrize("mask", [None, "bool", "float"])
@pytest.mark.parametrize("causal", [False, True])
def test_gradcheck_through_c(mask, causal):
    assert C_AVAILABLE
    q, k, v = (ember.tensor(a, requires_grad=True)
               for a in _qkv(np.float64, B=(2,), L=6, S=6 if causal else 7, E=3, Ev=2))
    S = k.shape[-2]
    args = [q, k, v]
    if mask == "bool":
        m = rng.random((6, S)) > 0.3
        m[:, 0] = True
        args.append(ember.tensor(m))
    elif mask == "float":
        args.append(ember.tensor(rng.standard_normal((6, S)), requires_grad=True))
    if mask is not None and causal:
        causal = False  # torch forbids both

    def f(*a):
        return ember.nn.functional.scaled_dot_product_attention(*a, is_causal=causal)
    assert gradcheck(f, args)
    assert gradgradcheck(f, args[:3] + args[3:4] if mask != "float" else args)


def _arrays(dt, mask):
    q, k, v = _qkv(dt, B=(2, 2), L=150, S=290, E=24, Ev=20)
    m = None
    if mask == "bool":
        m = rng.random((150, 290)) > 0.3
        m[3] = False
    elif mask == "float":
        m = rng.standard_normal((2, 1, 150, 290)).astype(dt)
    return q, k, v, m


@needs_c
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("mask", [None, "bool", "float"])
@pytest.mark.parametrize("causal", [False, True])
def test_c_kernel_equals_numpy_kernel(monkeypatch, dt, mask, causal):
    """The two kernels of each op compute the same values (summation order aside)."""
    assert C_AVAILABLE
    q, k, v, m = _arrays(dt, mask)
    c_out, c_lse = A._flash_kernel(np, q, k, v, m, 0.2, causal)
    g = rng.standard_normal(c_out.shape).astype(dt)
    gl = rng.standard_normal(c_lse.shape).astype(dt)
    c_grads = A._flash_bwd_kernel(np, q, k, v, m, g, c_out, c_lse, gl, 0.2, causal)
    monkeypatch.setattr(ckernels, "ENABLED", False)
    monkeypatch.setattr(A, "SINGLE_BLOCK_SCORES", 0)
    n_out, n_lse = A._flash_kernel(np, q, k, v, m, 0.2, causal)
    n_grads = A._flash_bwd_kernel(np, q, k, v, m, g, c_out, c_lse, gl, 0.2, causal)
    tol = dict(atol=1e-5, rtol=1e-4) if dt == np.float32 else dict(atol=1e-12, rtol=1e-11)
    np.testing.assert_allclose(c_out, n_out, **tol)
    np.testing.assert_allclose(c_lse, n_lse, **tol)
    for a, b in zip(c_grads, n_grads):
        np.testing.assert_allclose(a, b, **tol)
    # without mask_grad the score gradient is empty in both
    for kern_on in (True, False):
        monkeypatch.setattr(ckernels, "ENABLED", kern_on)
        r = A._flash_bwd_kernel(np, q, k, v, m, g, c_out, c_lse, None, 0.2, causal,
                                mask_grad=False)
        assert r[3].shape == c_lse.shape + (0,)
    # the C kernel really ran: its entry point answers for these arrays
    monkeypatch.setattr(ckernels, "ENABLED", True)
    assert CA.forward(q, k, v, m, 0.2, causal) is not None


@needs_c
def test_threads_give_the_same_values(monkeypatch):
    """Forward: bitwise the same at 1 and 2 threads.  Backward of one batch entry at 2
    threads (its key blocks split between them, dq summed from two parts): the NumPy
    kernel's values."""
    q, k, v, m = _arrays(np.float32, "bool")
    q1, k1, v1 = (rng.standard_normal((1, 600, 48)).astype(np.float32) for _ in range(3))
    g1 = rng.standard_normal((1, 600, 48)).astype(np.float32)
    prior = ember.get_num_threads()
    res = {}
    try:
        for nt in (1, 2):
            ember.set_num_threads(nt)
            out, lse = CA.forward(q1, k1, v1, None, 0.2, True)
            res[nt] = (CA.forward(q, k, v, m, 0.2, True),
                       CA.backward(q1, k1, v1, None, g1, out, lse, None, 0.2, True, True))
    finally:
        ember.set_num_threads(prior)
    for a, b in zip(res[1][0], res[2][0]):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(ckernels, "ENABLED", False)
    ref = A._flash_bwd_kernel(np, q1, k1, v1, None, g1, out, lse, None, 0.2, True)
    for nt in (1, 2):
        for a, b in zip(res[nt][1], ref):
            np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("path", [pytest.param("c", marks=needs_c), "numpy"])
def test_long_sequence_memory_is_linear(monkeypatch, path):
    """Forward and backward at L = 4096 never allocate an L x L block: the C kernels hold
    blocks of 64 x 256 scores, the NumPy ones all rows x 256 keys (BLOCK_K_BACKWARD)."""
    if path == "numpy":
        monkeypatch.setattr(ckernels, "ENABLED", False)
    L, E = 4096, 32
    q, k, v = (ember.tensor(rng.standard_normal((1, 1, L, E)).astype(np.float32),
                            requires_grad=True) for _ in range(3))
    g = ember.tensor(rng.standard_normal((1, 1, L, E)).astype(np.float32))
    tracemalloc.start()
    out = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    out.backward(g)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # the scores would be 64 MiB; q, k, v, out and grads are 0.5 MiB each
    assert peak < (L * L * 4 / 16 if path == "c" else L * L * 4 / 2), peak
    tq, tk, tv = (torch.from_numpy(t.detach().numpy()).requires_grad_() for t in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    ref.backward(torch.from_numpy(g.numpy()))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=2e-5)
    for a, b in zip((q, k, v), (tq, tk, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=2e-4, rtol=1e-3)


def test_dropout_draws_torch_stream():
    """dropout_p > 0 takes the unfused formula, whose mask is torch's, bit for bit."""
    q, k, v = _qkv(np.float32, B=(2, 2), L=9, S=11, E=4, Ev=3)
    torch.manual_seed(3)
    ember.manual_seed(3)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (q, k, v)), dropout_p=0.4)
    out = ember.nn.functional.scaled_dot_product_attention(
        *(ember.from_numpy(a) for a in (q, k, v)), dropout_p=0.4)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=1e-6, rtol=1e-5)
