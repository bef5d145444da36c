"""split / chunk / unbind as one autograd node (torch's SplitBackward0,
SplitWithSizesBackward0, UnbindBackward0), checked against torch: node names and edges,
gradients with pieces unused, view semantics and the in-place refusals, retain_grad and
hooks, double backward, forward AD, vmap, compile, and the op's own rules (batch, jvp,
shape on meta) called directly."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember._core.op import REGISTRY

SPLITS = {
    "split-int": lambda x: x.split(2, 1),
    "split-sizes": lambda x: x.split([1, 3, 2], 1),
    "split-last-short": lambda x: x.split(4, -1),
    "split-one-piece": lambda x: x.split(10, 1),
    "split-empty-piece": lambda x: x.split([0, 6, 0], 1),
    "split_with_sizes": lambda x: x.split_with_sizes([4, 2], 1),
    "chunk": lambda x: x.chunk(3, 1),
    "chunk-dim0": lambda x: x.chunk(2),
    "unbind": lambda x: x.unbind(1),
    "unbind-dim0": lambda x: x.unbind(0),
    "tensor_split": lambda x: x.tensor_split(3, 1),
}


def _pair(shape=(3, 6), seed=0, dtype=np.float64):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _weights(pieces, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(p.shape)) for p in pieces]


def _version(t):
    return t._version


def _close(e, t, **kw):
    np.testing.assert_allclose(np.asarray(e.detach().numpy()), t.detach().numpy(),
                               **({"rtol": 1e-12, "atol": 1e-12} | kw))


@pytest.mark.parametrize("name", list(SPLITS))
def test_node_name_and_edges_match_torch(name):
    e, t = _pair()
    pe, pt = SPLITS[name](e), SPLITS[name](t)
    assert len(pe) == len(pt)
    names = [type(p.grad_fn).__name__ for p in pe]
    assert names == [type(p.grad_fn).__name__ for p in pt], names
    if name != "tensor_split":  # one node for every piece, one edge into the input
        assert len({id(p.grad_fn) for p in pe}) == 1
        assert [p.output_nr for p in pe] == list(range(len(pe)))
        assert [type(n).__name__ for n, _ in pe[0].grad_fn.next_functions] == \
            [type(n).__name__ for n, _ in pt[0].grad_fn.next_functions] == ["AccumulateGrad"]
    for p, q in zip(pe, pt):
        # an empty piece shares no memory, and ember marks views by shared memory
        assert (p._base is e or p.numel() == 0) and q._base is t
        _close(p, q)


@pytest.mark.parametrize("name", list(SPLITS))
@pytest.mark.parametrize("used", ["all", "first", "last", "middle"])
def test_grads_with_unused_pieces_match_torch(name, used):
    grads = []
    for lib, x in zip((ember, torch), _pair(seed=2)):
        pieces = SPLITS[name](x * 1.5)  # an intermediate: the node's edge goes to mul
        ws = _weights(pieces)
        keep = {"all": range(len(pieces)), "first": [0], "last": [len(pieces) - 1],
                "middle": [len(pieces) // 2]}[used]
        loss = sum((pieces[i] * lib.tensor(ws[i])).sum() for i in keep)
        if not loss.requires_grad:
            continue  # every kept piece empty
        loss.backward()
        grads.append(x.grad)
    if grads:
        _close(*grads)


def test_noncontiguous_and_complex_inputs():
    a = np.random.default_rng(3).standard_normal((6, 4)) + \
        1j * np.random.default_rng(4).standard_normal((6, 4))
    outs = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        q, k, v = x.t().split([1, 2, 3], 1)  # non-contiguous pieces of a transposed view
        u = x.t().unbind(0)
        loss = (q * q.conj()).real.sum() + (v.abs() ** 2).sum() + (u[2] * 2j).real.sum()
        loss.backward()
        outs.append(x.grad)
    _close(*outs)


def test_single_float32_step_like_attention():
    """A GPT block's ``q, k, v = qkv(x).split(c, 2)`` with heads, against torch."""
    grads = []
    for lib, x in zip((ember, torch), _pair((2, 5, 12), 5, np.float32)):
        q, k, v = (x * 1).split(4, dim=2)
        q, k, v = (z.view(2, 5, 2, 2).transpose(1, 2) for z in (q, k, v))
        y = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        (y * y).sum().backward()
        grads.append(x.grad)
    _close(*grads, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ["split-int", "split-sizes", "chunk", "unbind"])
def test_inplace_on_pieces_raises_torch_error(name):
    msgs = []
    for lib, x in zip((ember, torch), _pair()):
        pieces = SPLITS[name](x.clone())
        with pytest.raises(RuntimeError) as err:
            pieces[1].mul_(2)
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


def test_chunk_of_empty_dim_matches_torch():
    for lib in (ember, torch):
        x = lib.zeros(0, 3, requires_grad=True)
        pieces = x.chunk(3)
        assert [tuple(p.shape) for p in pieces] == [(0, 3)] * 3
        assert type(pieces[0].grad_fn).__name__ == "SplitWithSizesBackward0"
    assert ember.zeros(2, 0, 3).unbind(1) == ()


@pytest.mark.parametrize("name", ["split-int", "split-sizes", "unbind"])
def test_views_share_storage_and_version(name):
    for lib, x in zip((ember, torch), _pair()):
        with lib.no_grad():
            base = x.clone()
            pieces = SPLITS[name](base)
            pieces[1].mul_(0)  # allowed without grad: writes through to the base
            v0 = _version(pieces[0])
            base.add_(1)
            assert _version(pieces[0]) == v0 + 1
        if lib is ember:
            got = [p.numpy().copy() for p in pieces], base.numpy().copy()
        else:
            want = [p.numpy() for p in pieces], base.numpy()
    for a, b in zip(got[0], want[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[1], want[1])


def test_piece_after_inplace_on_base_regenerates_from_its_slice():
    """torch refuses to backward through a piece whose base was written since; ember replays
    the piece's view (a slice) on the base's new history: the gradient is the derivative."""
    e, _ = _pair()
    base = e * 1
    q, k, v = base.split(2, 1)
    base.mul_(3)
    (k * 2).sum().backward()
    want = np.zeros((3, 6))
    want[:, 2:4] = 6
    np.testing.assert_array_equal(e.grad.numpy(), want)


def test_retain_grad_and_hooks_match_torch():
    res = []
    for lib, x in zip((ember, torch), _pair(seed=6)):
        q, k, v = (x * 2).split(2, 1)
        seen = []
        k.retain_grad()
        q.register_hook(lambda g: seen.append(g.clone()) or g * 10)
        ws = _weights((q, k))
        ((q * lib.tensor(ws[0])).sum() + (k * lib.tensor(ws[1])).sum()).backward()
        res.append((x.grad, k.grad, seen))
    _close(res[0][0], res[1][0])
    _close(res[0][1], res[1][1])
    assert len(res[0][2]) == len(res[1][2]) == 1
    _close(res[0][2][0], res[1][2][0])


@pytest.mark.parametrize("name", ["split-int", "split-sizes", "unbind", "chunk"])
def test_double_backward_matches_torch(name):
    out = []
    for lib, x in zip((ember, torch), _pair(seed=7)):
        pieces = SPLITS[name](x)
        # the last piece unused: its gradient is a zero block in the first backward
        f = sum((p.sin() * (i + 1)).sum() for i, p in enumerate(pieces[:-1]))
        (g,) = lib.autograd.grad(f, x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        out.append((g, gg))
    _close(out[0][0], out[1][0])
    _close(out[0][1], out[1][1])


@pytest.mark.parametrize("name", ["split-int", "split-sizes", "unbind", "chunk"])
def test_forward_ad_matches_torch(name):
    res = []
    rng = np.random.default_rng(8)
    a, ta = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    for lib in (ember, torch):
        fwd = lib.autograd.forward_ad
        with warnings.catch_warnings():
            # torch's forward AD scripts a helper with the deprecated torch.jit.script
            warnings.simplefilter("ignore", DeprecationWarning)
            with fwd.dual_level():
                x = fwd.make_dual(lib.tensor(a), lib.tensor(ta))
                pieces = SPLITS[name](x)
                res.append([fwd.unpack_dual(p.sin()).tangent for p in pieces])
    for p, q in zip(*res):
        _close(p, q)


@pytest.mark.parametrize("name", ["split-int", "split-sizes", "unbind", "chunk"])
def test_vmap_and_jacrev_match_torch(name):
    a = np.random.default_rng(9).standard_normal((4, 3, 6))
    fn = SPLITS[name]

    def f(x):
        pieces = fn(x)
        return sum((p.cos() * (i + 1)).sum() for i, p in enumerate(pieces[1:]))

    for transform in ("vmap", "jacrev"):
        got = getattr(ember.func, transform)(f)(ember.tensor(a[0] if transform == "jacrev"
                                                              else a))
        want = getattr(torch.func, transform)(f)(torch.tensor(a[0] if transform == "jacrev"
                                                              else a))
        _close(got, want)


def test_compiled_backward_matches_eager_torch():
    def f(x):
        q, k, v = x.split(2, 1)
        a, b, c = x.unbind(0)
        return (q * k).sin().sum() + (a * c).sum()

    res = []
    for lib, x in zip((ember, torch), _pair(seed=10)):
        fn = ember.compile(f) if lib is ember else f
        fn(x).backward()
        res.append(x.grad)
    _close(*res)


# ---- the ops called directly: their batch, jvp and shape rules ----------------------------
OPS = [("split", {"sizes": (2, 2, 2), "dim": 1}), ("split_with_sizes",
                                                   {"sizes": (1, 5), "dim": 1}),
       ("unbind", {"dim": 1})]


@pytest.mark.parametrize("name,params", OPS)
def test_op_batch_rule(name, params):
    op = REGISTRY[name]
    a = np.random.default_rng(11).standard_normal((4, 3, 6))
    got = ember.func.vmap(lambda x: tuple(op(x, **params)), in_dims=1)(ember.tensor(
        a.transpose(1, 0, 2)))
    for i, g in enumerate(got):
        want = [op(ember.tensor(a[b]), **params)[i].numpy() for b in range(4)]
        np.testing.assert_array_equal(g.numpy(), np.stack(want))


@pytest.mark.parametrize("name,params", OPS)
def test_op_jvp_rule(name, params):
    op = REGISTRY[name]
    rng = np.random.default_rng(12)
    a, t = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    fwd = ember.autograd.forward_ad
    with fwd.dual_level():
        outs = op(fwd.make_dual(ember.tensor(a), ember.tensor(t)), **params)
        tans = [fwd.unpack_dual(o).tangent for o in outs]
    for got, want in zip(tans, op(ember.tensor(t), **params)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name,params", OPS)
def test_op_shape_rule_on_meta(name, params):
    op = REGISTRY[name]
    real = op(ember.randn(3, 6), **params)
    meta = op(ember.empty(3, 6, device="meta"), **params)
    assert [tuple(m.shape) for m in meta] == [tuple(r.shape) for r in real]
    assert all(m.device.type == "meta" for m in meta)
