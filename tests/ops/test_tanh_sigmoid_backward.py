"""The fused ``tanh_backward``/``sigmoid_backward`` operators against torch's
``aten.tanh_backward``/``aten.sigmoid_backward``: values (dtypes, broadcasting, complex),
errors, their own derivatives (gradcheck, gradgradcheck, double backward of tanh and
sigmoid), the decomposition that compile/export lower, the shape and vmap rules, and that a
backward pass through tanh/sigmoid runs the one fused operator."""
import numpy as np
import pytest
import torch

import ember
from ember._core import meta
from ember._core.dispatch import DispatchMode
from ember._core.op import OPS
from ember.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(17)
NAMES = ("tanh_backward", "sigmoid_backward")
FORWARD = {"tanh_backward": "tanh", "sigmoid_backward": "sigmoid"}


def _arr(shape, dtype=np.float64, scale=1.0):
    a = rng.standard_normal(shape) * scale
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape) * scale
    return a.astype(dtype)


def _both(a, dtype=None):
    e, t = ember.tensor(a), torch.tensor(a)
    if dtype is not None:
        e, t = e.to(getattr(ember, dtype)), t.to(getattr(torch, dtype))
    return e, t


def _torch_op(name):
    return getattr(torch.ops.aten, name)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-6), ("float64", 1e-14),
                                       ("float16", 1e-3), ("bfloat16", 1e-2),
                                       ("complex64", 1e-6), ("complex128", 1e-14)])
def test_values_match_torch(name, dtype, tol):
    npdt = np.complex128 if dtype.startswith("complex") else np.float64
    ge, gt = _both(_arr((5, 7), npdt), dtype)
    oe, ot = _both(_arr((5, 7), npdt, 0.8), dtype)
    r = OPS[name](ge, oe)
    expect = _torch_op(name)(gt, ot)
    assert str(r.dtype) == str(expect.dtype).replace("torch", "ember")
    np.testing.assert_allclose(r.to(ember.complex128 if r.is_complex() else ember.float64)
                               .numpy(), expect.to(torch.complex128 if expect.is_complex()
                                                   else torch.float64).numpy(),
                               rtol=tol, atol=tol)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("gshape,oshape", [((3, 4), (4,)), ((4,), (3, 4)), ((3, 1), (1, 4)),
                                           ((), (2, 3)), ((2, 3), ()), ((), ()),
                                           ((0, 3), (3,))])
def test_broadcasting_matches_torch(name, gshape, oshape):
    ge, gt = _both(_arr(gshape))
    oe, ot = _both(_arr(oshape))
    r = OPS[name](ge, oe)
    expect = _torch_op(name)(gt, ot)
    assert tuple(r.shape) == tuple(expect.shape)
    np.testing.assert_allclose(r.numpy(), expect.numpy(), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("gdt,odt", [("float32", "float64"), ("float64", "float32"),
                                     ("bfloat16", "float16"), ("float32", "complex64")])
def test_mixed_dtypes_promote_as_torch(name, gdt, odt):
    ge, gt = _both(_arr((6,)), gdt)
    oe, ot = _both(_arr((6,), scale=0.5), odt)
    r = OPS[name](ge, oe)
    expect = _torch_op(name)(gt, ot)
    assert str(r.dtype) == str(expect.dtype).replace("torch", "ember")
    np.testing.assert_allclose(r.to(ember.complex128).numpy(),
                               expect.to(torch.complex128).numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["int64", "bool", "uint8"])
def test_integer_and_bool_inputs_raise_like_torch(name, dtype):
    a = np.ones(3)
    ge, gt = _both(a, dtype)
    with pytest.raises(NotImplementedError) as theirs:
        _torch_op(name)(gt, gt)
    with pytest.raises(NotImplementedError) as ours:
        OPS[name](ge, ge)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gradcheck_and_gradgradcheck(name, dtype):
    g = ember.tensor(_arr((3, 4), dtype), requires_grad=True)
    o = ember.tensor(_arr((3, 4), dtype, 0.7), requires_grad=True)
    assert gradcheck(OPS[name], (g, o))
    assert gradgradcheck(OPS[name], (g, o))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_op_gradients_match_torch(name, dtype):
    ga, oa, wa = _arr((3, 4), dtype), _arr((3, 4), dtype, 0.7), _arr((3, 4), dtype)
    ge, oe = ember.tensor(ga, requires_grad=True), ember.tensor(oa, requires_grad=True)
    gt, ot = torch.tensor(ga, requires_grad=True), torch.tensor(oa, requires_grad=True)
    re, rt = OPS[name](ge, oe), _torch_op(name)(gt, ot)
    ae = ember.autograd.grad(re, (ge, oe), ember.tensor(wa))
    at = torch.autograd.grad(rt, (gt, ot), torch.tensor(wa))
    for a, b in zip(ae, at):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn", ["tanh", "sigmoid"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_double_backward_of_the_forward_matches_torch(fn, dtype):
    xa, ga, wa = _arr((4, 5), dtype), _arr((4, 5), dtype), _arr((4, 5), dtype)
    xe, xt = ember.tensor(xa, requires_grad=True), torch.tensor(xa, requires_grad=True)
    ge, gt = ember.tensor(ga, requires_grad=True), torch.tensor(ga, requires_grad=True)
    (de,) = ember.autograd.grad(getattr(xe, fn)(), xe, ge, create_graph=True)
    (dt,) = torch.autograd.grad(getattr(xt, fn)(), xt, gt, create_graph=True)
    np.testing.assert_allclose(de.detach().numpy(), dt.detach().numpy(), rtol=1e-12, atol=1e-14)
    ae = ember.autograd.grad(de, (xe, ge), ember.tensor(wa))
    at = torch.autograd.grad(dt, (xt, gt), torch.tensor(wa))
    for a, b in zip(ae, at):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-11, atol=1e-13)
    x = ember.tensor(_arr((3,), dtype), requires_grad=True)
    assert gradgradcheck(lambda t: getattr(t, fn)(), (x,))


class _Recorder(DispatchMode):
    """A pass-through mode (as tracing is): records the operators it sees."""

    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_backward_pass_runs_the_fused_op(name):
    x = ember.tensor(_arr((8,)), requires_grad=True)
    y = getattr(x, FORWARD[name])()
    with _Recorder() as rec:
        y.sum().backward()
    assert rec.names.count(name) == 1
    assert not {"mul", "sub", "rsub"} & set(rec.names)
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    getattr(xt, FORWARD[name])().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "complex128"])
def test_decomposition_agrees_with_the_kernel(name, dtype):
    op = OPS[name]
    npdt = np.complex128 if dtype.startswith("complex") else np.float64
    g = ember.tensor(_arr((3, 4), npdt)).to(getattr(ember, dtype))
    o = ember.tensor(_arr((4,), npdt, 0.6)).to(getattr(ember, dtype))
    kernel, decomposed = op(g, o), op.decomp(g, o)
    assert decomposed.dtype == kernel.dtype and tuple(decomposed.shape) == (3, 4)
    tol = 1e-2 if dtype == "bfloat16" else 1e-6
    np.testing.assert_allclose(decomposed.to(ember.complex128).numpy(),
                               kernel.to(ember.complex128).numpy(), rtol=tol, atol=tol)
    assert op.lowering is not None and op.lowering.kind == "decomposition"


@pytest.mark.parametrize("name", NAMES)
def test_shape_rule_matches_the_kernel(name):
    g = ember.tensor(_arr((2, 1, 3)).astype(np.float32))
    o = ember.tensor(_arr((4, 1)))
    shape, dtype = OPS[name].shape(meta.meta_of(g), meta.meta_of(o))
    r = OPS[name](g, o)
    assert tuple(shape) == tuple(r.shape) and dtype == r.dtype


@pytest.mark.parametrize("name", NAMES)
def test_vmap_matches_a_loop(name):
    g, o = ember.tensor(_arr((5, 3))), ember.tensor(_arr((5, 3), scale=0.5))
    r = ember.func.vmap(OPS[name])(g, o)
    expect = ember.stack([OPS[name](g[i], o[i]) for i in range(5)])
    np.testing.assert_array_equal(r.numpy(), expect.numpy())
