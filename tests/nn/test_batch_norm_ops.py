"""Batch norm as torch's functional ATen operators (ember.ops.nn.batch_norm), against torch:
values, running statistics, gradients, double backward, in-place use of the output, vmap,
and the export graph (one node, torch's node count after the Core ATen decompositions)."""
import warnings

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional


def _pair(rng, shape, dtype, positive=False):
    a = rng.standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.5
    return ember.tensor(a.copy()), torch.tensor(a.copy())


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5), (2, 3, 2, 2, 3)])
def test_values_running_stats_and_grads_match_torch(training, dtype, tol, shape):
    rng = np.random.default_rng(0)
    c = shape[1]
    (x, tx), (w, tw), (b, tb) = (_pair(rng, shape, dtype), _pair(rng, (c,), dtype),
                                 _pair(rng, (c,), dtype))
    (rm, trm), (rv, trv) = _pair(rng, (c,), dtype), _pair(rng, (c,), dtype, positive=True)
    for t in (x, w, b, tx, tw, tb):
        t.requires_grad_(True)
    out = F.batch_norm(x, rm, rv, w, b, training, 0.3, 1e-4)
    want = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training, 0.3, 1e-4)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=tol, atol=tol)
    g = rng.standard_normal(shape).astype(dtype)
    out.backward(ember.tensor(g))
    want.backward(torch.tensor(g))
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=tol * 10,
                                   atol=tol * 10)


def test_bfloat16_is_computed_in_float32_and_rounded_once():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 4, 3)).astype(np.float32)
    x = ember.tensor(a).to(ember.bfloat16)
    tx = torch.tensor(a).to(torch.bfloat16)
    out = F.batch_norm(x, None, None, training=True)
    want = torch.nn.functional.batch_norm(tx, None, None, training=True)
    assert out.dtype == ember.bfloat16
    np.testing.assert_allclose(out.float().numpy(), want.float().numpy(), atol=2e-2)


def test_output_may_be_written_in_place_before_backward():
    """The vjp reads the statistics, not the output: an in-place ReLU after batch norm
    (as in torchvision's blocks) keeps backward valid."""
    rng = np.random.default_rng(2)
    (x, tx), (w, tw) = _pair(rng, (4, 3, 5), "float64"), _pair(rng, (3,), "float64")
    x.requires_grad_(True)
    tx.requires_grad_(True)
    out = F.relu(F.batch_norm(x, ember.zeros(3, dtype=ember.float64),
                              ember.ones(3, dtype=ember.float64), w, None, True), inplace=True)
    want = torch.relu_(torch.nn.functional.batch_norm(
        tx, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), tw, None,
        True))
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("training", [True, False])
def test_gradgradcheck(training):
    x = ember.randn(4, 3, 2, dtype=ember.float64, requires_grad=True)
    w = ember.rand(3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(3, dtype=ember.float64, requires_grad=True)

    def fn(x, w, b):
        return F.batch_norm(x, ember.zeros(3, dtype=ember.float64),
                            ember.ones(3, dtype=ember.float64), w, b, training, 0.1, 1e-5)
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


def test_vmap_per_example_statistics_equal_a_loop_and_torch_func():
    rng = np.random.default_rng(3)
    (x, tx), (w, tw) = _pair(rng, (5, 4, 3, 2), "float64"), _pair(rng, (3,), "float64")

    def ours(xi):
        return F.batch_norm(xi, None, None, w, None, True)
    got = ember.func.vmap(ours)(x)
    loop = ember.stack([ours(x[i]) for i in range(5)])
    want = torch.func.vmap(lambda xi: torch.nn.functional.batch_norm(xi, None, None, tw, None,
                                                                     True))(tx)
    np.testing.assert_allclose(got.numpy(), loop.numpy(), atol=1e-12)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-12)


def _conv_bn(lib):
    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(1, 3, 1, 1)
            self.bn = lib.nn.BatchNorm2d(3)

        def forward(self, x):
            return (self.bn(self.conv(x)),)
    return M()


def test_export_graph_has_one_batch_norm_node_as_torch_core_aten():
    ember.manual_seed(0)
    ep = ember.export.export(_conv_bn(ember), (ember.randn(1, 1, 3, 3),))
    core = ep.run_decompositions()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)   # torch's own pytree deprecation
        tcore = torch.export.export(_conv_bn(torch), (torch.randn(1, 1, 3, 3),)) \
            .run_decompositions()
    names = [str(n.target) for n in core.graph.nodes if n.op == "call_function"]
    assert "ember.ops.aten._native_batch_norm_legit_functional.default" in str(core.graph)
    assert "aten.convolution.default" in str(core.graph)
    assert len(names) == len([n for n in tcore.graph.nodes if n.op == "call_function"])
    assert len(list(core.graph.nodes)) == len(list(tcore.graph.nodes))
    kinds = [s.kind.name for s in core.graph_signature.output_specs]
    assert kinds == [s.kind.name for s in tcore.graph_signature.output_specs]
    x = ember.randn(1, 1, 3, 3)
    m = _conv_bn(ember)
    m.load_state_dict(ep.state_dict)
    np.testing.assert_allclose(core.module()(x)[0].detach().numpy(),
                               m(x)[0].detach().numpy(), atol=1e-6)


# evaluation runs one C pass (ckernels.conv.channel_affine) for C-contiguous float32/float64
# planes of 16+ elements: against torch and the NumPy form, with and without affine
# parameters, a plane split over threads (> 16384 elements), a strided input (NumPy), a
# half input (in float32), and its gradients
@pytest.mark.parametrize("shape,dtype,affine,strided", [
    ((4, 5, 17), "float32", True, False),
    ((2, 3, 6, 7), "float64", True, False),
    ((2, 3, 6, 7), "float32", False, False),
    ((1, 2, 130, 131), "float32", True, False),
    ((2, 4, 2, 3, 5), "float64", True, False),
    ((3, 4, 5, 6), "float32", True, True),
    ((2, 3, 6, 7), "float16", True, False),
])
@pytest.mark.parametrize("threads", [1, 2])
def test_evaluation_matches_torch_and_the_numpy_form(shape, dtype, affine, strided, threads,
                                                    monkeypatch):
    from ember._core.ckernels import conv as ck
    rng = np.random.default_rng(1)
    c = shape[1]
    (x, tx), (w, tw), (b, tb) = (_pair(rng, shape, dtype), _pair(rng, (c,), dtype),
                                 _pair(rng, (c,), dtype))
    (rm, trm), (rv, trv) = _pair(rng, (c,), dtype), _pair(rng, (c,), dtype, positive=True)
    if strided:   # a (B, C, ...) view of a (C, B, ...) array
        x, tx = (t.transpose(0, 1).contiguous().transpose(0, 1) for t in (x, tx))
        assert not x.is_contiguous()
    if not affine:
        w = b = tw = tb = None
    x.requires_grad_(True)
    tx.requires_grad_(True)
    calls = []

    def spy(*args, _real=ck.channel_affine):
        out = _real(*args)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(ck, "channel_affine", spy)
    prev = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        out = F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-3)
    finally:
        ember.set_num_threads(prev)
    want = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, False, 0.1, 1e-3)
    uses_c = not strided   # a half input computes in float32 (contiguous): C too
    assert out.dtype == x.dtype and any(calls) == uses_c
    tol = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(out.detach().float().numpy(), want.detach().float().numpy(),
                               rtol=tol, atol=tol)
    g = rng.standard_normal(shape).astype(dtype)
    out.backward(ember.tensor(g))
    want.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol,
                               atol=tol)
    monkeypatch.setattr(ck, "ENABLED", False)
    with ember.no_grad():
        numpy_form = F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-3)
    np.testing.assert_allclose(out.detach().float().numpy(), numpy_form.float().numpy(),
                               rtol=tol, atol=tol)
