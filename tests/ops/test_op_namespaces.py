"""ember.ops.aten: OpOverloadPacket/OpOverload handles with torch's schemas, running ember's
implementations; values checked against torch.ops.aten."""
import numpy as np
import pytest
import torch

import ember
from ember.library.aten_table import ATEN
from ember.ops.op_namespaces import OpOverload, OpOverloadPacket

ENTRIES = [(name, ov) for name, entries in ATEN.items() for ov, _, _ in entries]


@pytest.mark.parametrize("name,overload", ENTRIES, ids=[f"{n}.{o}" for n, o in ENTRIES])
def test_schema_matches_torch(name, overload):
    ours = getattr(getattr(ember.ops.aten, name), overload)._schema
    theirs = getattr(getattr(torch.ops.aten, name), overload)._schema
    assert ours.name == theirs.name
    assert ours.overload_name == theirs.overload_name
    assert [(a.name, a.kwarg_only, a.is_write) for a in ours.arguments] == \
        [(a.name, a.kwarg_only, a.is_write) for a in theirs.arguments]
    assert [a.has_default_value() for a in ours.arguments] == \
        [a.has_default_value() for a in theirs.arguments]
    assert len(ours.returns) == len(theirs.returns)
    assert ours.is_mutable is theirs.is_mutable


def test_packet_and_overload_attributes():
    p = ember.ops.aten.add
    assert isinstance(p, OpOverloadPacket) and type(p).__name__ == "OpOverloadPacket"
    o = p.Tensor
    assert isinstance(o, OpOverload) and type(o).__name__ == "OpOverload"
    tp, to = torch.ops.aten.add, torch.ops.aten.add.Tensor
    assert (repr(p), str(p), repr(o), str(o)) == (repr(tp), str(tp), repr(to), str(to))
    assert o.name() == to.name() == "aten::add.Tensor"
    assert (o._opname, o._overloadname) == (to._opname, to._overloadname)
    assert o._overloadpacket is p and o.overloadpacket is p
    assert p.name() == "aten::add" and p.Tensor is o
    assert str(o._schema) == str(to._schema)
    assert set(p.overloads()) <= set(tp.overloads())
    assert ember.ops.aten.add_.Tensor._schema.is_mutable
    assert ember.ops.aten.add.out._schema.is_mutable
    assert ember.ops.aten.conv2d.default.name() == torch.ops.aten.conv2d.default.name()


def test_overloads_are_hashable_dict_keys():
    table = {ember.ops.aten.conv2d.default: "conv", ember.ops.aten.add.Tensor: "add"}
    assert table[ember.ops.aten.conv2d.default] == "conv"
    assert ember.ops.aten.conv2d.default is ember.ops.aten.conv2d.default
    assert ember.ops.aten.add.Tensor != ember.ops.aten.add.Scalar


def test_unknown_names_raise_like_torch():
    with pytest.raises(AttributeError) as want:
        torch.ops.aten.not_an_op
    with pytest.raises(AttributeError) as got:
        ember.ops.aten.not_an_op
    assert str(got.value) == str(want.value)
    with pytest.raises(AttributeError) as want:
        torch.ops.aten.add.nope
    with pytest.raises(AttributeError) as got:
        ember.ops.aten.add.nope
    assert str(got.value) == str(want.value)
    with pytest.raises(AttributeError):
        ember.ops.no_such_namespace_anywhere


def test_submodules_of_ember_ops_still_resolve():
    import ember.ops.pointwise
    assert ember.ops.pointwise.__name__ == "ember.ops.pointwise"
    assert ember.ops.linalg.__name__ == "ember.ops.linalg"
    assert ember.ops.REGISTRY is ember._core.op.REGISTRY
    assert not hasattr(ember, "op_namespaces")


def _pair(*shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if positive:
        a = np.abs(a) + 0.5
    return ember.tensor(a), torch.tensor(a)


def _close(got, want, **kw):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, **kw)
        return
    if isinstance(want, torch.Tensor):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-5, **kw)
    else:
        assert got == want


X, TX = _pair(2, 3)
Y, TY = _pair(2, 3, seed=1)
P, TP = _pair(2, 3, positive=True)
M, TM = _pair(3, 4, seed=2)
IMG, TIMG = _pair(2, 3, 6, 6, seed=3)
W, TW = _pair(4, 3, 3, 3, seed=4)
B, TB = _pair(4, seed=5)

CASES = [
    ("add.Tensor", lambda a: a.add.Tensor(X, Y, alpha=2), lambda a: a.add.Tensor(TX, TY, alpha=2)),
    ("add.Scalar", lambda a: a.add.Scalar(X, 3), lambda a: a.add.Scalar(TX, 3)),
    ("add packet", lambda a: a.add(X, Y), lambda a: a.add(TX, TY)),
    ("sub.Tensor", lambda a: a.sub.Tensor(X, Y), lambda a: a.sub.Tensor(TX, TY)),
    ("mul.Tensor", lambda a: a.mul.Tensor(X, Y), lambda a: a.mul.Tensor(TX, TY)),
    ("div.Tensor", lambda a: a.div.Tensor(X, P), lambda a: a.div.Tensor(TX, TP)),
    ("div.Tensor_mode", lambda a: a.div.Tensor_mode(X, P, rounding_mode="floor"),
     lambda a: a.div.Tensor_mode(TX, TP, rounding_mode="floor")),
    ("pow.Tensor_Scalar", lambda a: a.pow.Tensor_Scalar(P, 3),
     lambda a: a.pow.Tensor_Scalar(TP, 3)),
    ("mm", lambda a: a.mm.default(X, M), lambda a: a.mm.default(TX, TM)),
    ("addmm", lambda a: a.addmm.default(B[:3], X, M[:, :3], beta=0.5, alpha=2),
     lambda a: a.addmm.default(TB[:3], TX, TM[:, :3], beta=0.5, alpha=2)),
    ("t", lambda a: a.t.default(X), lambda a: a.t.default(TX)),
    ("view", lambda a: a.view.default(X, [3, 2]), lambda a: a.view.default(TX, [3, 2])),
    ("expand", lambda a: a.expand.default(B[:3], [2, 3]),
     lambda a: a.expand.default(TB[:3], [2, 3])),
    ("permute", lambda a: a.permute.default(IMG, [0, 2, 3, 1]),
     lambda a: a.permute.default(TIMG, [0, 2, 3, 1])),
    ("transpose.int", lambda a: a.transpose.int(X, 0, 1), lambda a: a.transpose.int(TX, 0, 1)),
    ("slice.Tensor", lambda a: a.slice.Tensor(M, 1, 1, 4, 2),
     lambda a: a.slice.Tensor(TM, 1, 1, 4, 2)),
    ("select.int", lambda a: a.select.int(M, 1, 2), lambda a: a.select.int(TM, 1, 2)),
    ("_to_copy", lambda a: a._to_copy.default(X, dtype=ember.float64),
     lambda a: a._to_copy.default(TX, dtype=torch.float64)),
    ("sym_size.int", lambda a: a.sym_size.int(M, 1), lambda a: a.sym_size.int(TM, 1)),
    ("sum.dim_IntList", lambda a: a.sum.dim_IntList(M, [1], True),
     lambda a: a.sum.dim_IntList(TM, [1], True)),
    ("mean.dim", lambda a: a.mean.dim(M, [0]), lambda a: a.mean.dim(TM, [0])),
    ("max.dim", lambda a: a.max.dim(M, 1), lambda a: a.max.dim(TM, 1)),
    ("_softmax", lambda a: a._softmax.default(M, 1, False),
     lambda a: a._softmax.default(TM, 1, False)),
    ("_log_softmax", lambda a: a._log_softmax.default(M, 0, False),
     lambda a: a._log_softmax.default(TM, 0, False)),
    ("convolution", lambda a: a.convolution.default(IMG, W, B, [1, 1], [1, 1], [1, 1], False,
                                                    [0, 0], 1),
     lambda a: a.convolution.default(TIMG, TW, TB, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)),
    ("convolution transposed", lambda a: a.convolution.default(
        IMG, W.transpose(0, 1).contiguous(), B, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
     lambda a: a.convolution.default(TIMG, TW.transpose(0, 1).contiguous(), TB, [2, 2],
                                     [1, 1], [1, 1], True, [1, 1], 1)),
    ("conv2d", lambda a: a.conv2d.default(IMG, W, B, [2, 2], [0, 0]),
     lambda a: a.conv2d.default(TIMG, TW, TB, [2, 2], [0, 0])),
    ("native_layer_norm", lambda a: a.native_layer_norm.default(IMG, [6, 6], None, None, 1e-5),
     lambda a: a.native_layer_norm.default(TIMG, [6, 6], None, None, 1e-5)),
    ("linear", lambda a: a.linear.default(M, ember.ones(2, 4), B[:2]),
     lambda a: a.linear.default(TM, torch.ones(2, 4), TB[:2])),
    ("max_pool2d", lambda a: a.max_pool2d.default(IMG, [2, 2]),
     lambda a: a.max_pool2d.default(TIMG, [2, 2])),
    ("avg_pool2d", lambda a: a.avg_pool2d.default(IMG, [3, 3], [2, 2], [1, 1]),
     lambda a: a.avg_pool2d.default(TIMG, [3, 3], [2, 2], [1, 1])),
    ("embedding", lambda a: a.embedding.default(M, ember.tensor([2, 0, 1])),
     lambda a: a.embedding.default(TM, torch.tensor([2, 0, 1]))),
    ("cat", lambda a: a.cat.default([X, Y], 1), lambda a: a.cat.default([TX, TY], 1)),
    ("split.Tensor", lambda a: a.split.Tensor(M, 2, 1), lambda a: a.split.Tensor(TM, 2, 1)),
    ("where.self", lambda a: a.where.self(X > 0, X, Y), lambda a: a.where.self(TX > 0, TX, TY)),
    ("zeros", lambda a: a.zeros.default([2, 2], dtype=ember.float64),
     lambda a: a.zeros.default([2, 2], dtype=torch.float64)),
    ("full", lambda a: a.full.default([2], 3.5), lambda a: a.full.default([2], 3.5)),
    ("arange.start_step", lambda a: a.arange.start_step(1, 10, 3),
     lambda a: a.arange.start_step(1, 10, 3)),
    ("relu", lambda a: a.relu.default(X), lambda a: a.relu.default(TX)),
    ("sigmoid packet", lambda a: a.sigmoid(X), lambda a: a.sigmoid(TX)),
    ("eq.Scalar", lambda a: a.eq.Scalar(ember.tensor([1, 2]), 2),
     lambda a: a.eq.Scalar(torch.tensor([1, 2]), 2)),
    ("gelu tanh", lambda a: a.gelu.default(X, approximate="tanh"),
     lambda a: a.gelu.default(TX, approximate="tanh")),
    ("clamp", lambda a: a.clamp.default(X, -0.5, 0.5), lambda a: a.clamp.default(TX, -0.5, 0.5)),
    ("signature fallback: hypot", lambda a: a.hypot(X, Y), lambda a: a.hypot(TX, TY)),
    ("adaptive_avg_pool2d", lambda a: a.adaptive_avg_pool2d.default(IMG, [2, 3]),
     lambda a: a.adaptive_avg_pool2d.default(TIMG, [2, 3])),
    ("_adaptive_avg_pool2d", lambda a: a._adaptive_avg_pool2d.default(IMG, [1, 1]),
     lambda a: a._adaptive_avg_pool2d.default(TIMG, [1, 1])),
    ("hardtanh", lambda a: a.hardtanh.default(X, -0.5, 0.25),
     lambda a: a.hardtanh.default(TX, -0.5, 0.25)),
    ("special_i0e", lambda a: a.special_i0e(X), lambda a: a.special_i0e(TX)),
    ("linalg_vector_norm", lambda a: a.linalg_vector_norm(M, 3),
     lambda a: a.linalg_vector_norm(TM, 3)),
    ("fft_rfft", lambda a: a.fft_rfft(M).abs(), lambda a: a.fft_rfft(TM).abs()),
]


@pytest.mark.parametrize("label,ours,theirs", CASES, ids=[c[0] for c in CASES])
def test_values_match_torch(label, ours, theirs):
    _close(ours(ember.ops.aten), theirs(torch.ops.aten))


def test_inplace_and_out_overloads_write():
    e, t = X.clone(), TX.clone()
    r = ember.ops.aten.add_.Tensor(e, Y, alpha=3)
    torch.ops.aten.add_.Tensor(t, TY, alpha=3)
    assert r is e
    _close(e, t)
    out, tout = ember.empty(2, 3), torch.empty(2, 3)
    ember.ops.aten.mul.out(X, Y, out=out)
    torch.ops.aten.mul.out(TX, TY, out=tout)
    _close(out, tout)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_variants_match_torch(training):
    rm, rv = ember.zeros(3), ember.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    w, b = ember.full((3,), 1.5), ember.full((3,), 0.25)
    tw, tb = torch.full((3,), 1.5), torch.full((3,), 0.25)
    got = ember.ops.aten.native_batch_norm.default(IMG, w, b, rm, rv, training, 0.1, 1e-5)
    want = torch.ops.aten.native_batch_norm.default(TIMG, tw, tb, trm, trv, training, 0.1, 1e-5)
    _close(got, want)
    _close((rm, rv), (trm, trv))
    frm, frv = ember.zeros(3), ember.ones(3)
    got = ember.ops.aten._native_batch_norm_legit_functional.default(
        IMG, w, b, frm, frv, training, 0.1, 1e-5)
    want = torch.ops.aten._native_batch_norm_legit_functional.default(
        TIMG, tw, tb, torch.zeros(3), torch.ones(3), training, 0.1, 1e-5)
    _close(got, want)
    assert ember.equal(frm, ember.zeros(3))  # functional: the inputs are not written
    got = ember.ops.aten._native_batch_norm_legit_no_training.default(
        IMG, w, b, ember.zeros(3), ember.ones(3), 0.1, 1e-5)
    want = torch.ops.aten._native_batch_norm_legit_no_training.default(
        TIMG, tw, tb, torch.zeros(3), torch.ones(3), 0.1, 1e-5)
    _close(got, want)


def test_sym_size_under_compile_is_the_size():
    def f(x):
        return x.new_ones(ember.ops.aten.sym_size.int(x, 0))
    out = ember.compile(f, backend="eager")(ember.ones(4, 2))
    assert tuple(out.shape) == (4,)
