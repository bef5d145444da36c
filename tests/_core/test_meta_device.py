"""The meta device: tensors with shape, dtype and strides but no data, against torch's.

Every check runs the same program on torch's meta device and on ember's and compares
what comes out: shapes, dtypes, strides, storage offsets, reprs, exception types and
messages; the module recipes (deferred initialisation, ensembling with a meta base)
compare values against eagerly built models.
"""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn


def _both(fn):
    """``fn(lib)`` run with torch and with ember."""
    return fn(torch), fn(ember)


def _meta_like(t, e, strides=True):
    assert e.is_meta and e.device.type == "meta" and str(e.device) == "meta"
    assert tuple(e.shape) == tuple(t.shape), (tuple(e.shape), tuple(t.shape))
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    if strides:
        assert e.stride() == t.stride(), (e.stride(), t.stride())
        assert e.storage_offset() == t.storage_offset()
        assert e.is_contiguous() == t.is_contiguous()
    assert e.requires_grad == t.requires_grad


def _same_error(fn, message=True):
    """``fn(lib)`` raises the same exception type (with the same message) in both."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)) as ee:
        fn(ember)
    if message:
        assert str(ee.value) == str(te.value)


# ---- creation ---------------------------------------------------------------------------

FACTORIES = {
    "empty": lambda L: L.empty(2, 3, device="meta"),
    "empty-int": lambda L: L.empty((4,), dtype=L.int64, device="meta"),
    "zeros": lambda L: L.zeros(2, 3, 4, device="meta"),
    "ones-bool": lambda L: L.ones(5, dtype=L.bool, device="meta"),
    "full": lambda L: L.full((2, 2), 7, device="meta"),
    "full-float": lambda L: L.full((3,), 1.5, device="meta"),
    "rand": lambda L: L.rand(3, 4, device="meta"),
    "randn-grad": lambda L: L.randn(3, device="meta", requires_grad=True),
    "randint": lambda L: L.randint(0, 5, (2, 3), device="meta"),
    "arange": lambda L: L.arange(10, device="meta"),
    "arange-float": lambda L: L.arange(0, 1, 0.25, device="meta"),
    "linspace": lambda L: L.linspace(0, 1, 7, device="meta"),
    "eye": lambda L: L.eye(3, 4, device="meta"),
    "tensor": lambda L: L.tensor([[1, 2], [3, 4]], device="meta"),
    "scalar_tensor": lambda L: L.scalar_tensor(3.0, device="meta"),
    "empty_strided": lambda L: L.empty_strided((2, 3), (1, 2), device="meta"),
    "empty_like": lambda L: L.empty_like(L.empty(2, 3, device="meta")),
    "zeros_like-cpu": lambda L: L.zeros_like(L.ones(2, 3), device="meta"),
    "full_like": lambda L: L.full_like(L.empty(3, device="meta"), 2),
    "rand_like": lambda L: L.rand_like(L.empty(2, 2, device="meta")),
    "randn_like-dtype": lambda L: L.randn_like(L.empty(2, device="meta"), dtype=L.float64),
    "new_empty": lambda L: L.empty(2, device="meta").new_empty(3, 1),
    "new_zeros": lambda L: L.empty(2, device="meta", dtype=L.float64).new_zeros(4),
    "new_tensor": lambda L: L.empty(2, device="meta").new_tensor([1, 2, 3]),
}


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_create_meta_tensors(name):
    _meta_like(*_both(FACTORIES[name]))


def test_device_objects_and_defaults():
    d = ember.device("meta")
    assert d.type == "meta" and d.index is None and repr(d) == repr(torch.device("meta"))
    assert ember.empty(1, device="meta").device == d == "meta"
    assert not ember.ones(1).is_meta
    with ember.device("meta"):
        t = ember.ones(2, 3)
        r = ember.randn(4)
    _meta_like(torch.ones(2, 3, device="meta"), t)
    assert r.is_meta and not ember.ones(1).is_meta
    ember.set_default_device("meta")
    try:
        assert ember.zeros(3).is_meta and ember.arange(3).is_meta
        assert ember.get_default_device() == d
    finally:
        ember.set_default_device(None)
    assert not ember.zeros(3).is_meta


def test_meta_factories_draw_no_random_numbers():
    """As torch: a meta sampler does not advance the CPU generator."""
    def run(L):
        L.manual_seed(0)
        L.randn(3, device="meta")
        L.rand(2, 2, device="meta")
        return L.randn(4)
    t, e = _both(run)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_huge_meta_tensors_allocate_nothing():
    t = ember.empty(10 ** 6, 10 ** 6, device="meta")   # 4 TB if it had data
    y = (t @ t.T).softmax(-1).sum(0)
    assert tuple(y.shape) == (10 ** 6,) and y.is_meta
    assert t.nbytes == 4 * 10 ** 12 and t.element_size() == 4


def test_to_meta_and_back():
    t, e = _both(lambda L: L.arange(6.0).reshape(2, 3).to("meta"))
    _meta_like(t, e)
    t, e = _both(lambda L: L.arange(6.0).reshape(2, 3).t().to("meta"))
    _meta_like(t, e)  # a dense transposed layout is kept (preserve_format)
    m = ember.empty(2, device="meta")
    assert m.to("meta") is m and m.to(device="meta", dtype=ember.float64).is_meta
    _same_error(lambda L: L.empty(2, device="meta").cpu())
    _same_error(lambda L: L.empty(2, device="meta").to("cpu"))
    _same_error(lambda L: L.ones(2).copy_(L.empty(2, device="meta")))
    e = ember.empty(2, 3, device="meta")
    assert e.copy_(ember.ones(2, 3)) is e  # a write into a meta tensor stores nothing
    c = copy.deepcopy(ember.empty(2, 3, device="meta", requires_grad=True))
    _meta_like(copy.deepcopy(torch.empty(2, 3, device="meta", requires_grad=True)), c)


# ---- operators --------------------------------------------------------------------------

OPS = {
    "add": lambda L, x: x + 1,
    "mul-bcast": lambda L, x: x * L.empty(3, 1, 4, device="meta"),
    "int-promote": lambda L, x: L.empty(3, 4, dtype=L.int32, device="meta") + 1.5,
    "cpu-scalar-tensor": lambda L, x: x * L.tensor(2.0),
    "cpu-scalar-first": lambda L, x: L.tensor(2.0) - x,
    "exp-of-transposed": lambda L, x: x.t().exp(),
    "mul-of-transposed": lambda L, x: x.t() * x.t(),
    "sum": lambda L, x: x.sum(),
    "sum-dim": lambda L, x: x.sum(1, keepdim=True),
    "mean-int": lambda L, x: x.mean(0),
    "argmax": lambda L, x: x.argmax(1),
    "max-dim": lambda L, x: x.max(1)[1],
    "matmul": lambda L, x: x @ x.t(),
    "bmm": lambda L, x: L.bmm(x.expand(2, 3, 4), L.empty(2, 4, 5, device="meta")),
    "cat": lambda L, x: L.cat([x, x], 0),
    "stack": lambda L, x: L.stack([x, x], 1),
    "softmax": lambda L, x: x.softmax(-1),
    "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, (4,)),
    "where": lambda L, x: L.where(x > 0, x, 0.0),
    "cmp": lambda L, x: x > 0,
    "cast": lambda L, x: x.to(L.float16),
    "clone": lambda L, x: x.clone(),
    "contiguous": lambda L, x: x.t().contiguous(),
    "gather": lambda L, x: x.gather(1, L.zeros(3, 2, dtype=L.int64, device="meta")),
    "index-tensor": lambda L, x: x[L.zeros(5, dtype=L.int64, device="meta")],
    "topk": lambda L, x: x.topk(2, dim=1)[0],
    "sort": lambda L, x: x.sort(0)[1],
    "conv2d": lambda L, x: L.nn.functional.conv2d(L.empty(2, 3, 8, 8, device="meta"),
                                                  L.empty(5, 3, 3, 3, device="meta"), padding=1),
    "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(L.empty(2, 3, 8, 8, device="meta"), 2),
    "linear": lambda L, x: L.nn.functional.linear(x, L.empty(6, 4, device="meta")),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(
        x, L.zeros(3, dtype=L.int64, device="meta")),
    "einsum": lambda L, x: L.einsum("ij,kj->ik", x, x),
    "fft": lambda L, x: L.fft.rfft(x),
    "cumsum": lambda L, x: x.cumsum(1),
    "lstm": lambda L, x: L.nn.LSTM(4, 6, 2, device="meta")(x.unsqueeze(1))[1][1],
    "gru_cell": lambda L, x: L.nn.GRUCell(4, 5, device="meta")(x),
    "sdpa-causal": lambda L, x: L.nn.functional.scaled_dot_product_attention(
        x.view(1, 3, 4), x.view(1, 3, 4), x.view(1, 3, 4), is_causal=True),
    "linalg.inv": lambda L, x: L.linalg.inv(L.empty(2, 3, 3, device="meta")),
    "linalg.solve": lambda L, x: L.linalg.solve(L.empty(3, 3, device="meta"), x[:, :2]),
    "cholesky": lambda L, x: L.linalg.cholesky(L.empty(4, 4, device="meta")),
    "repeat_interleave-output_size": lambda L, x: x.repeat_interleave(
        L.empty(4, dtype=L.int64, device="meta"), dim=1, output_size=9),
}

VIEWS = {
    "t": lambda L, x: x.t(),
    "transpose": lambda L, x: x.transpose(0, 1),
    "permute": lambda L, x: x.unsqueeze(0).permute(2, 0, 1),
    "slice": lambda L, x: x[:, 1:3],
    "step-slice": lambda L, x: x[1:, ::2],
    "select": lambda L, x: x[2],
    "select-col": lambda L, x: x[:, 3],
    "narrow": lambda L, x: x.narrow(1, 1, 2),
    "expand": lambda L, x: x[:, :1].expand(2, 3, 5),
    "view": lambda L, x: x.view(2, 6),
    "view-of-slice": lambda L, x: x[1:].view(8),
    "reshape-view": lambda L, x: x.reshape(4, 3),
    "reshape-copy": lambda L, x: x.t().reshape(12),
    "flatten": lambda L, x: x.unsqueeze(1).flatten(),
    "unsqueeze": lambda L, x: x.unsqueeze(1),
    "squeeze": lambda L, x: x[:1].squeeze(0),
    "diagonal": lambda L, x: x.diagonal(1),
    "unfold": lambda L, x: x.unfold(1, 2, 1),
    "as_strided": lambda L, x: x.as_strided((2, 2), (1, 4), 1),
    "split": lambda L, x: x.split(2, 1)[1],
    "chunk": lambda L, x: x.chunk(3, 0)[2],
    "unbind": lambda L, x: x.unbind(1)[3],
    "movedim": lambda L, x: x.movedim(0, 1),
    "real-of-complex": lambda L, x: L.view_as_real(x.to(L.complex64))[1:],
    "imag": lambda L, x: x.to(L.complex64).t().imag,
    "view_as_complex": lambda L, x: L.view_as_complex(x.view(3, 2, 2)),
    "detach": lambda L, x: x.detach(),
}


# torch returns LAPACK's column-major results; ember's CPU results are row-major, and its
# meta results are what its CPU gives
_LAPACK_LAYOUT = ("linalg.inv", "linalg.solve", "cholesky")


@pytest.mark.parametrize("name", OPS)
def test_ops_give_torchs_shape_dtype_and_strides(name):
    t, e = _both(lambda L: OPS[name](L, L.empty(3, 4, device="meta")))
    _meta_like(t, e, strides=name not in _LAPACK_LAYOUT)


@pytest.mark.parametrize("name", VIEWS)
def test_views_give_torchs_strides_and_offsets(name):
    t, e = _both(lambda L: VIEWS[name](L, L.empty(3, 4, device="meta")))
    _meta_like(t, e)
    assert e._base is not None or name in ("reshape-copy", "detach")


def test_inplace_ops_on_meta():
    def run(L):
        x = L.empty(3, 4, device="meta")
        x.add_(1).mul_(L.empty(4, device="meta")).clamp_(0, 1)
        x[0] = 2.0
        x[:, 1:].zero_()
        return x
    _meta_like(*_both(run))
    # torch's meta kernels word this one differently from its CPU kernels; ember's is the CPU's
    _same_error(lambda L: L.empty(3, 4, device="meta").add_(L.empty(2, 4, device="meta")),
                message=False)
    x = ember.empty(2, device="meta")
    v = x._version
    x.add_(1)
    assert x._version == v + 1


def test_shape_errors_are_torchs():
    _same_error(lambda L: L.empty(3, 4, device="meta") + L.empty(5, device="meta"),
                message=False)  # torch's meta kernels word it unlike its CPU ones (ember's)
    with pytest.raises(RuntimeError):
        ember.empty(3, 4, device="meta") @ ember.empty(3, 4, device="meta")
    with pytest.raises(RuntimeError):
        ember.empty(3, 4, device="meta").view(5)


# ---- what needs values ------------------------------------------------------------------

VALUE_READS = {
    "item": lambda L: L.empty(1, device="meta").item(),
    "item-many": lambda L: L.empty(3, device="meta").item(),
    "bool": lambda L: bool(L.empty((), device="meta")),
    "float": lambda L: float(L.empty(1, device="meta")),
    "int": lambda L: int(L.empty((), device="meta")),
    "if": lambda L: 1 if L.empty((), device="meta") > 0 else 0,
    "tolist": lambda L: L.empty(2, device="meta").tolist(),
    "numpy": lambda L: L.empty(2, device="meta").numpy(),
    "nonzero": lambda L: L.nonzero(L.empty(2, device="meta")),
    "argwhere": lambda L: L.argwhere(L.empty(2, device="meta")),
    "bool-mask": lambda L: L.empty(3, device="meta")[L.empty(3, device="meta") > 0],
    "masked_select": lambda L: L.masked_select(L.empty(3, device="meta"),
                                               L.ones(3, dtype=L.bool, device="meta")),
    "meta+cpu": lambda L: L.empty(2, device="meta") + L.ones(2),
    "cpu+meta": lambda L: L.ones(2) + L.empty(2, device="meta"),
    "cat-mixed": lambda L: L.cat([L.empty(2, device="meta"), L.ones(2)]),
    "one_hot-inferred": lambda L: L.nn.functional.one_hot(L.empty(3, dtype=L.int64,
                                                                 device="meta")),
    "repeat_interleave": lambda L: L.empty(3, device="meta").repeat_interleave(
        L.empty(3, dtype=L.int64, device="meta")),
}


@pytest.mark.parametrize("name", VALUE_READS)
def test_reading_values_raises_torchs_error(name):
    _same_error(VALUE_READS[name])


def test_unique_is_refused():
    for L in (torch, ember):
        with pytest.raises(NotImplementedError, match="Meta"):
            L.unique(L.empty(3, device="meta"))


# ---- printing ---------------------------------------------------------------------------

REPRS = {
    "float": lambda L: L.empty(2, 3, device="meta"),
    "0d-int": lambda L: L.empty((), dtype=L.int64, device="meta"),
    "bool": lambda L: L.empty(2, dtype=L.bool, device="meta"),
    "complex": lambda L: L.empty(2, dtype=L.complex64, device="meta"),
    "empty": lambda L: L.empty(0, 4, device="meta"),
    "grad": lambda L: L.empty(2, device="meta", requires_grad=True),
    "grad_fn": lambda L: L.empty(2, device="meta", requires_grad=True) * 2,
    "parameter": lambda L: L.nn.Parameter(L.empty(2, device="meta")),
}


@pytest.mark.parametrize("name", REPRS)
def test_repr_is_torchs(name):
    t, e = _both(REPRS[name])
    assert repr(e).replace("ember.", "torch.") == repr(t)
    assert str(e).replace("ember.", "torch.") == str(t)


def test_storage_and_pointer_queries():
    t, e = _both(lambda L: L.empty(3, 4, device="meta")[1:, 2:])
    assert e.data_ptr() == t.data_ptr() == 24
    assert ember.empty(2, device="meta").data_ptr() == 0
    assert e.storage_offset() == t.storage_offset() == 6
    assert e.numel() == t.numel() and e.dim() == t.dim()


# ---- autograd ---------------------------------------------------------------------------

def test_backward_makes_meta_gradients():
    def run(L):
        x = L.empty(3, 4, device="meta", requires_grad=True)
        w = L.empty(4, 5, device="meta", requires_grad=True)
        y = (x @ w).tanh().softmax(-1)
        y.mean().backward()
        return x.grad, w.grad
    (tx, tw), (ex, ew) = _both(run)
    _meta_like(tx, ex)
    _meta_like(tw, ew)


def test_autograd_grad_and_graph_on_meta():
    def run(L):
        x = L.empty(2, 3, device="meta", requires_grad=True)
        y = (x * x).sum(1)
        g, = L.autograd.grad(y, x, L.ones(2, device="meta"), create_graph=True)
        return g, y
    (tg, ty), (eg, ey) = _both(run)
    _meta_like(tg, eg)
    assert eg.grad_fn is not None and tg.grad_fn is not None


# ---- nn ---------------------------------------------------------------------------------

def test_nn_init_on_meta_is_a_no_op():
    names = ["uniform_", "normal_", "kaiming_uniform_", "kaiming_normal_", "xavier_uniform_",
             "xavier_normal_", "zeros_", "ones_", "trunc_normal_", "orthogonal_", "eye_"]
    for n in names:
        t, e = _both(lambda L: getattr(L.nn.init, n)(L.empty(4, 3, device="meta")))
        _meta_like(t, e)
    t, e = _both(lambda L: L.nn.init.constant_(L.empty(4, device="meta"), 2.0))
    _meta_like(t, e)
    t, e = _both(lambda L: L.nn.init.dirac_(L.empty(4, 3, 3, device="meta")))
    _meta_like(t, e)
    t, e = _both(lambda L: L.nn.init.sparse_(L.empty(4, 3, device="meta"), 0.5))
    _meta_like(t, e)


MODULES = {
    "Linear": lambda L, **kw: L.nn.Linear(3, 5, **kw),
    "Linear-positional": lambda L, **kw: L.nn.Linear(3, 5, True, kw.get("device")),
    "Conv2d": lambda L, **kw: L.nn.Conv2d(3, 4, 3, **kw),
    "Embedding": lambda L, **kw: L.nn.Embedding(10, 4, **kw),
    "LayerNorm": lambda L, **kw: L.nn.LayerNorm(6, **kw),
    "BatchNorm1d": lambda L, **kw: L.nn.BatchNorm1d(4, **kw),
    "MultiheadAttention": lambda L, **kw: L.nn.MultiheadAttention(8, 2, **kw),
    "TransformerEncoderLayer": lambda L, **kw: L.nn.TransformerEncoderLayer(8, 2, 16, **kw),
}


def _states(t_mod, e_mod):
    ts, es = t_mod.state_dict(), e_mod.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        _meta_like(ts[k], es[k])


@pytest.mark.parametrize("name", MODULES)
def test_module_constructors_take_device_meta(name):
    _states(*_both(lambda L: MODULES[name](L, device="meta")))
    with ember.device("meta"):
        e = MODULES[name](ember)
    _states(MODULES[name](torch, device="meta"), e)


def test_reset_parameters_on_meta():
    m = enn.Linear(3, 4, device="meta")
    m.reset_parameters()
    assert m.weight.is_meta and m.bias.is_meta


def test_module_to_meta_and_to_empty():
    def run(L):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4))
        m.to("meta")
        return m
    t, e = _both(run)
    _states(t, e)
    e.to_empty(device="cpu")
    assert all(p.device.type == "cpu" and not p.is_meta for p in e.state_dict().values())
    assert tuple(e[0].weight.shape) == (4, 3) and e[0].weight.requires_grad
    assert isinstance(e[0].weight, enn.Parameter)
    # recurse=False leaves the children where they are
    top = enn.Module()
    top.p = enn.Parameter(ember.empty(2, device="meta"))
    top.child = enn.Linear(2, 2, device="meta")
    top.to_empty(device="cpu", recurse=False)
    assert not top.p.is_meta and top.child.weight.is_meta


def test_load_state_dict_into_meta_model():
    ember.manual_seed(0)
    ref = enn.Sequential(enn.Linear(4, 8), enn.ReLU(), enn.LayerNorm(8), enn.Linear(8, 2))
    with ember.device("meta"):
        m = enn.Sequential(enn.Linear(4, 8), enn.ReLU(), enn.LayerNorm(8), enn.Linear(8, 2))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m.load_state_dict(ref.state_dict())  # copying into meta: a no-op, with torch's warning
    assert m[0].weight.is_meta
    assert any("copying from a non-meta parameter in the checkpoint to a meta parameter"
               in str(x.message) for x in w)
    m.load_state_dict(ref.state_dict(), assign=True)
    assert not m[0].weight.is_meta and isinstance(m[0].weight, enn.Parameter)
    x = ember.randn(5, 4)
    np.testing.assert_array_equal(m(x).detach().numpy(), ref(x).detach().numpy())


def test_deferred_init_to_empty_then_load_equals_eager():
    """The recipe: build on meta, materialise with to_empty, load the weights, run."""
    ember.manual_seed(1)
    eager = enn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    with ember.device("meta"):
        lazy = enn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    assert all(p.is_meta for p in lazy.parameters())
    lazy.to_empty(device="cpu")
    lazy.load_state_dict(eager.state_dict())
    x = ember.randn(2, 5, 16)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), eager(x).detach().numpy())


def test_transformer_and_cnn_shapes_on_meta_match_torch():
    def encoder(L):
        layer = L.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, device="meta")
        enc = L.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        x = L.empty(3, 7, 16, device="meta")
        mask = L.nn.Transformer.generate_square_subsequent_mask(7, device="meta")
        return enc(x, mask=mask, is_causal=True)

    def cnn(L):
        net = L.nn.Sequential(
            L.nn.Conv2d(3, 8, 3, padding=1), L.nn.BatchNorm2d(8), L.nn.ReLU(),
            L.nn.MaxPool2d(2), L.nn.Conv2d(8, 16, 3, stride=2), L.nn.ReLU(),
            L.nn.AdaptiveAvgPool2d((2, 2)), L.nn.Flatten(), L.nn.Dropout(0.5),
            L.nn.Linear(64, 10)).to("meta")
        out = net(L.empty(4, 3, 32, 32, device="meta"))
        out.logsumexp(1).mean().backward()
        return out, net[0].weight.grad, net[1].running_mean
    t, e = _both(encoder)
    _meta_like(t.detach(), e.detach())
    for t, e in zip(*_both(cnn)):
        _meta_like(t.detach(), e.detach())


def test_ensembling_with_a_meta_base_equals_a_loop():
    """torch.func's model-ensembling recipe: stacked weights, a stateless copy on meta."""
    from ember.func import functional_call, stack_module_state

    ember.manual_seed(0)
    models = [enn.Sequential(enn.Linear(5, 8), enn.GELU(), enn.Linear(8, 3)) for _ in range(4)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    assert all(p.is_meta for p in base.parameters())

    def fmodel(p, b, x):
        return functional_call(base, (p, b), (x,))
    x = ember.randn(6, 5)
    out = ember.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    loop = ember.stack([m(x) for m in models])
    np.testing.assert_allclose(out.detach().numpy(), loop.detach().numpy(), rtol=1e-6,
                               atol=1e-6)
    # one minibatch per model as well
    xs = ember.randn(4, 6, 5)
    out = ember.vmap(fmodel)(params, buffers, xs)
    loop = ember.stack([m(xi) for m, xi in zip(models, xs)])
    np.testing.assert_allclose(out.detach().numpy(), loop.detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def test_skip_init_builds_on_meta_and_draws_nothing():
    def run(L):
        L.manual_seed(0)
        m = L.nn.utils.skip_init(L.nn.Linear, 3, 4)
        return m, L.rand(3)
    (tm, tr), (em, er) = _both(run)
    assert em.weight.device.type == "cpu" and not em.weight.is_meta
    assert tuple(em.weight.shape) == tuple(tm.weight.shape) == (4, 3)
    np.testing.assert_array_equal(er.numpy(), tr.numpy())  # no init drew from the generator


def test_backward_through_a_device_move_returns_to_the_source_device():
    # the gradient of x.to(d) goes back to x's device: meta gradients cannot reach a CPU leaf
    _same_error(lambda L: L.ones(3, requires_grad=True).to("meta").sum().backward())
    _same_error(lambda L: L.empty(3, device="meta", requires_grad=True).cpu().sum().backward())
    x = ember.empty(2, 3, device="meta", requires_grad=True)
    (x.to(ember.float64) * 2).sum().backward()
    _meta_like(torch.empty(2, 3, device="meta"), x.grad)


def test_long_reprs_wrap_their_suffixes_as_torch():
    def cases(L):
        return [L.nn.Parameter(L.empty(2, 2, device="meta", dtype=L.float16)),
                L.empty(2, 2, device="meta", dtype=L.float16, requires_grad=True) * 2,
                L.ones(3, 2, dtype=L.float16, requires_grad=True) * 3,
                L.arange(12.0).to(L.float16).requires_grad_() * 1]
    for t, e in zip(cases(torch), cases(ember)):
        assert repr(e).replace("ember.", "torch.") == repr(t)


def test_view_and_reshape_strides_of_strided_meta_tensors_match_torch():
    """views of sliced/permuted layouts (size-1 dims included): torch's strides, or torch's
    refusal; reshape copies exactly where torch's does.  (Empty slices keep NumPy's strides
    on CPU and meta alike, a known difference from torch.)"""
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        shape = tuple(int(d) for d in rng.choice([1, 1, 2, 3, 4], rng.integers(1, 5)))
        steps = tuple(int(s) for s in rng.choice([1, 2], len(shape)))
        perm = tuple(int(p) for p in rng.permutation(len(shape)))
        n = int(np.prod(shape))
        news = {(n,), (1, n), (n, 1), tuple(reversed(shape)), shape[:1] + (-1,)}

        def make(L):
            big = L.empty(tuple(d * s + 1 for d, s in zip(shape, steps)), device="meta")
            return big[tuple(slice(0, d * s, s) for d, s in zip(shape, steps))].permute(perm)
        t, e = make(torch), make(ember)
        _meta_like(t, e)
        for new in news:
            for how in ("view", "reshape"):
                try:
                    tv = getattr(t, how)(new)
                except RuntimeError:
                    with pytest.raises(RuntimeError):
                        getattr(e, how)(new)
                    continue
                ev = getattr(e, how)(new)
                _meta_like(tv, ev)
                assert (ev._base is None) == (tv._base is None), (shape, steps, perm, new, how)
                checked += 1
    assert checked > 1000


def test_function_transforms_on_meta():
    def run(L):
        x = L.empty(3, 4, device="meta")
        return [L.func.jacrev(lambda a: a.sin().sum(0))(x),
                L.func.jacfwd(lambda a: a.sin().sum(0))(x),
                L.func.grad(lambda a: a.sin().sum())(x),
                L.vmap(L.mv, in_dims=(None, 0))(x, L.empty(5, 4, device="meta"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.func's own jit.script use
        results = _both(run)
    for t, e in zip(*results):
        _meta_like(t, e, strides=False)
