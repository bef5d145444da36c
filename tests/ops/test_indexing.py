"""Indexing vs torch: random index expressions (hypothesis), gradients through indexing,
in-place writes through views, error messages."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import ember

SHAPE = (4, 3, 5)


def _both(a, requires_grad=False):
    e = ember.tensor(a, requires_grad=requires_grad)
    t = torch.tensor(a, requires_grad=requires_grad)
    return e, t


def _close(e, t):
    t = t.detach()
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


# ---- random index expressions ---------------------------------------------------------------
@st.composite
def index_exprs(draw):
    """A list of index items (as specs, converted per library) for a tensor of SHAPE."""
    items = []
    dim = 0
    used_ellipsis = False
    n_items = draw(st.integers(0, 4))
    for _ in range(n_items):
        kinds = ["none"]
        if dim < len(SHAPE):
            kinds += ["int", "slice", "list", "tensor", "mask", "zero_d"]
        if not used_ellipsis:
            kinds.append("ellipsis")
        kind = draw(st.sampled_from(kinds))
        if kind == "ellipsis":
            used_ellipsis = True
            items.append(("ellipsis",))
            dim = len(SHAPE) - sum(1 for it in items[:-1] if it[0] not in ("none",))
            # dims left after the ellipsis are unknown until the end: be conservative
            dim = len(SHAPE)
            continue
        if kind == "none":
            items.append(("none",))
            continue
        n = SHAPE[dim]
        if kind == "int":
            items.append(("int", draw(st.integers(-n, n - 1))))
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            items.append(("slice", start, stop, step))
        elif kind in ("list", "tensor"):
            k = draw(st.integers(1, 3))
            vals = draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k))
            items.append((kind, vals))
        elif kind == "zero_d":
            items.append(("zero_d", draw(st.integers(-n, n - 1))))
        else:
            mdims = draw(st.integers(1, min(2, len(SHAPE) - dim)))
            mshape = SHAPE[dim:dim + mdims]
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)),
                                 max_size=int(np.prod(mshape))))
            items.append(("mask", np.array(bits, dtype=bool).reshape(mshape)))
            dim += mdims
            continue
        dim += 1
    return items


def _build(lib, items):
    out = []
    for it in items:
        k = it[0]
        if k == "ellipsis":
            out.append(Ellipsis)
        elif k == "none":
            out.append(None)
        elif k == "int":
            out.append(it[1])
        elif k == "slice":
            out.append(slice(*it[1:]))
        elif k == "list":
            out.append(list(it[1]))
        elif k == "tensor":
            out.append(lib.tensor(it[1]))
        elif k == "zero_d":
            out.append(lib.tensor(it[1]))
        else:
            out.append(lib.tensor(it[1]))
    return tuple(out)


def _outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # compared by type between the two libraries
        return None, type(exc)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(index_exprs())
def test_getitem_matches_torch(items):
    data = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    e, t = _both(data)
    te, t_exc = _outcome(lambda: t[_build(torch, items)])
    ee, e_exc = _outcome(lambda: e[_build(ember, items)])
    assert e_exc == t_exc, f"{items}: ember raised {e_exc}, torch {t_exc}"
    if t_exc is None:
        _close(ee, te)
        # basic indexing must give a view exactly when torch's result is one
        if te._base is not None or te.data_ptr() == t.data_ptr():
            assert np.shares_memory(ee._data, e._data) or ee.numel() == 0


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(index_exprs(), st.sampled_from(["scalar", "tensor", "int-tensor"]))
def test_setitem_matches_torch(items, value_kind):
    data = np.arange(np.prod(SHAPE), dtype=np.float64).reshape(SHAPE)
    e, t = _both(data)
    target = _outcome(lambda: t[_build(torch, items)])[0]
    if target is None:
        return
    if value_kind == "scalar":
        ve, vt = -7.5, -7.5
    else:
        v = -np.arange(1, int(np.prod(target.shape[-1:])) + 1).reshape(target.shape[-1:])
        if value_kind == "tensor":
            v = v.astype(np.float64)
        ve, vt = ember.tensor(v), torch.tensor(v)
    _, t_exc = _outcome(lambda: t.__setitem__(_build(torch, items), vt))
    _, e_exc = _outcome(lambda: e.__setitem__(_build(ember, items), ve))
    assert e_exc == t_exc, f"{items}: ember raised {e_exc}, torch {t_exc}"
    _close(e, t)


# ---- gradients through indexing ---------------------------------------------------------------
KEYS = [
    lambda lib: (0, slice(1, None)),
    lambda lib: (lib.tensor([0, 2, 0, 0]),),  # duplicates accumulate
    lambda lib: (slice(None), lib.tensor([1, 1]), None),
    lambda lib: (lib.tensor([[True, False, True], [False, False, True], [True] * 3,
                             [False] * 3]),),
    lambda lib: (Ellipsis, lib.tensor([4, 4, 0]), ),
    lambda lib: (lib.tensor([3, 3]), slice(None), lib.tensor([1, 1])),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_getitem_grad(k):
    data = np.random.default_rng(k).standard_normal(SHAPE)
    e, t = _both(data, requires_grad=True)
    re, rt = e[KEYS[k](ember)], t[KEYS[k](torch)]
    w = np.random.default_rng(1).standard_normal(tuple(rt.shape))
    (re * ember.tensor(w)).sum().backward()
    (rt * torch.tensor(w)).sum().backward()
    _close(e.grad, t.grad)


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_setitem_grad(k):
    """``y = x * 1; y[key] = z * 2; loss(y)``: grads of x and z match torch."""
    rng = np.random.default_rng(k)
    data = rng.standard_normal(SHAPE)
    e, t = _both(data, requires_grad=True)
    shape = tuple(t.detach()[KEYS[k](torch)].shape)
    ze, zt = _both(rng.standard_normal(shape[-1:]), requires_grad=True)
    w = rng.standard_normal(SHAPE)
    for lib, x, z, out in ((ember, e, ze, []), (torch, t, zt, [])):
        y = x * 1
        y[KEYS[k](lib)] = z * 2
        (y * lib.tensor(w)).sum().backward()
    _close(e.grad, t.grad)
    _close(ze.grad, zt.grad)


def test_inplace_write_through_view_reaches_base():
    rng = np.random.default_rng(0)
    e, t = _both(rng.standard_normal((3, 4)), requires_grad=True)
    ze, zt = _both(rng.standard_normal(3), requires_grad=True)
    for lib, x, z in ((ember, e, ze), (torch, t, zt)):
        y = x * 1
        v = y[0, 1:]
        v.mul_(z)
        y[1] += 1
        (y ** 2).sum().backward()
    _close(e.grad, t.grad)
    _close(ze.grad, zt.grad)


def test_double_backward_through_advanced_index():
    rng = np.random.default_rng(0)
    e, t = _both(rng.standard_normal(5), requires_grad=True)
    res = []
    for lib, x in ((ember, e), (torch, t)):
        y = (x[lib.tensor([0, 0, 3])] ** 3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        res.append(gg)
    _close(*res)


def test_basic_index_is_view_and_shares_version():
    x = ember.zeros(3, 4)
    v = x[1, ::2]
    v.fill_(5)
    assert x[1].tolist() == [5, 0, 5, 0]
    assert v._version == x._version > 0
    a = x[[0, 1]]
    a.fill_(9)
    assert x[0, 0].item() == 0  # advanced indexing copies


def test_setitem_casts_and_broadcasts():
    x = ember.zeros(2, 3, dtype=ember.int64)
    x[0] = ember.tensor([1.7, 2.2, -3.9])
    x[1, [0, 2]] = 4.9
    tx = torch.zeros(2, 3, dtype=torch.int64)
    tx[0] = torch.tensor([1.7, 2.2, -3.9])
    tx[1, [0, 2]] = 4.9
    _close(x, tx)


def test_saved_index_modified_inplace_raises():
    x = ember.ones(4, requires_grad=True)
    idx = ember.tensor([0, 1])
    y = x * 2
    z = y[idx]
    idx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("key,exc,msg", [
    (5, IndexError, "index 5 is out of bounds for dimension 0 with size 4"),
    ((0, -4), IndexError, "index -4 is out of bounds for dimension 1 with size 3"),
    ((0, 0, 0, 0), IndexError, "too many indices for tensor of dimension 3"),
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    ((Ellipsis, 1.5), IndexError, "only integers, slices"),
])
def test_getitem_error_messages(key, exc, msg):
    x = ember.zeros(SHAPE)
    with pytest.raises(exc, match=msg.replace("(", r"\(")):
        x[key]
    with pytest.raises(exc):
        torch.zeros(SHAPE)[key]


def test_index_functions_errors_and_messages():
    x = ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 4"):
        x.gather(1, ember.tensor([[7]]))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, ember.tensor([3]))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
        x.index_put_((ember.tensor([0]),), ember.tensor([1.0], dtype=ember.float64))
    with pytest.raises(IndexError, match="out of range: tried to access index 12"):
        x.take(ember.tensor([12]))


def test_out_variants():
    x = ember.arange(12.).reshape(3, 4)
    out = ember.empty(0)
    r = ember.gather(x, 1, ember.tensor([[0], [1], [3]]), out=out)
    assert r is out and out.tolist() == [[0.], [5.], [11.]]
    out = ember.empty(0)
    ember.index_select(x, 0, ember.tensor([2]), out=out)
    assert out.tolist() == [[8., 9., 10., 11.]]
    out = ember.empty(0)
    ember.masked_select(x, x > 9, out=out)
    assert out.tolist() == [10., 11.]


def test_nonzero_and_where_single_arg():
    x = np.array([[0, 1, 0], [2, 0, 3]])
    e, t = ember.tensor(x), torch.tensor(x)
    for a, b in zip(ember.nonzero(e, as_tuple=True), torch.nonzero(t, as_tuple=True)):
        _close(a, b)
    _close(e.nonzero(), t.nonzero())
