"""Reductions and sorting beyond the op database: named-tuple results, out= and in-place
forms, error messages, warnings, second derivatives and tie-breaking, all against torch."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import ember

NAN = float("nan")


def E(values, dtype="float64", requires_grad=False):
    return ember.tensor(values, dtype=getattr(ember, dtype), requires_grad=requires_grad)


def T(values, dtype="float64", requires_grad=False):
    return torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad)


def same(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-9,
                               equal_nan=True)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]


# ---- named tuples -----------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda lib, x: lib.max(x, 1), lambda lib, x: x.min(0, keepdim=True),
    lambda lib, x: lib.sort(x, descending=True), lambda lib, x: x.topk(2),
    lambda lib, x: lib.kthvalue(x, 2), lambda lib, x: lib.median(x, 1),
    lambda lib, x: lib.nanmedian(x, 0), lambda lib, x: lib.mode(x, 1),
    lambda lib, x: lib.aminmax(x, dim=1), lambda lib, x: lib.cummax(x, 1),
    lambda lib, x: x.cummin(0)])
def test_named_tuples_match_torch(call):
    data = [[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]]
    e, t = call(ember, E(data)), call(torch, T(data))
    assert type(e).__name__ == type(t).__name__
    assert isinstance(e, tuple) and len(e) == len(t) == 2
    fields = ("min", "max") if type(t).__name__ == "aminmax" else ("values", "indices")
    for f, ev, tv in zip(fields, e, t):
        same(getattr(e, f), getattr(t, f))
        same(ev, tv)
    a, b = e
    assert a is e[0] and b is e[1]
    assert repr(e) == repr(t).replace("torch.", "ember.")


def test_return_types_module_and_pickle():
    import ember.return_types as rt
    assert ember.return_types is rt
    r = ember.max(E([[1.0, 5.0], [7.0, 2.0]]), 1)
    assert isinstance(r, rt.max)
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is rt.max
    np.testing.assert_array_equal(back.indices.numpy(), [1, 0])
    np.testing.assert_array_equal(back.values.numpy(), [5.0, 7.0])


# ---- out= and in-place ------------------------------------------------------------------
def test_out_variants_match_torch():
    data = [[3.0, 1.0, 2.0], [0.5, 4.0, -1.0]]
    for lib, mk in ((ember, E), (torch, T)):
        x = mk(data)
        v, i = lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.int64)
        r = lib.max(x, 1, out=(v, i))
        assert r[0] is v and r[1] is i
        s = lib.empty(0, dtype=lib.float64)
        assert lib.cumsum(x, 0, out=s) is s
        sv, si = lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.int64)
        lib.sort(x, 1, out=(sv, si))
        q = lib.empty(0, dtype=lib.float64)
        lib.quantile(x, 0.25, dim=1, out=q)
        lib_res = (v, i, s, sv, si, q)
        if lib is ember:
            e_res = lib_res
        else:
            t_res = lib_res
    for e, t in zip(e_res, t_res):
        same(e, t)


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_inplace_cumulative_matches_torch(name):
    data = [[1.5, -2.0, 0.5], [2.0, 3.0, -1.0]]
    e, t = E(data, requires_grad=True), T(data, requires_grad=True)
    ye, yt = e * 1, t * 1
    getattr(ye, name + "_")(1)
    getattr(yt, name + "_")(1)
    same(ye, yt)
    (ye * E([[1.0, 2, 3], [4, 5, 6]])).sum().backward()
    (yt * T([[1.0, 2, 3], [4, 5, 6]])).sum().backward()
    same(e.grad, t.grad)


def test_binary_max_min_forms():
    a, b = [[1.0, 5.0], [3.0, -2.0]], [[2.0, 4.0], [3.0, 0.0]]
    same(ember.max(E(a), E(b)), torch.max(T(a), T(b)))
    same(E(a).min(E(b)), T(a).min(T(b)))
    same(ember.max(E(a, "int64"), E(b)), torch.max(T(a, "int64"), T(b)))


# ---- errors and warnings ----------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda lib: lib.max(lib.empty(0)),
    lambda lib: lib.max(lib.empty(0, 3), 0),
    lambda lib: lib.amax(lib.empty(0, 3), 0),
    lambda lib: lib.argmax(lib.empty(0)),
    lambda lib: lib.argmax(lib.tensor([True, False])),
    lambda lib: lib.mean(lib.tensor([1, 2])),
    lambda lib: lib.nanmean(lib.tensor([1, 2])),
    lambda lib: lib.var(lib.tensor([1, 2])),
    lambda lib: lib.topk(lib.tensor([1.0, 2.0]), 3),
    lambda lib: lib.kthvalue(lib.tensor([1.0, 2.0]), 3),
    lambda lib: lib.median(lib.empty(0, 2), 0),
    lambda lib: lib.mode(lib.empty(0)),
    lambda lib: lib.quantile(lib.tensor([1.0]), 1.5),
    lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5),
    lambda lib: lib.quantile(lib.tensor([1.0]), 0.5, interpolation="foo"),
    lambda lib: lib.bincount(lib.tensor([-1])),
    lambda lib: lib.histc(lib.tensor([1.0]), bins=4, min=3, max=1),
    lambda lib: lib.searchsorted(lib.tensor([1, 3]), lib.tensor([2]), side="left", right=True),
    lambda lib: lib.bucketize(lib.tensor([3]), lib.tensor([[1, 3]])),
    lambda lib: lib.aminmax(lib.empty(0)),
    lambda lib: lib.norm(lib.empty(0), float("inf")),
    lambda lib: lib.logcumsumexp(lib.tensor([1, 2]), 0),
    lambda lib: lib.sum(lib.ones(2, 3), (0, 0)),
    lambda lib: lib.cumsum(lib.ones(2, 3), 2),
])
def test_errors_match_torch(call):
    with pytest.raises(Exception) as t_exc:
        call(torch)
    with pytest.raises(type(t_exc.value)) as e_exc:
        call(ember)
    t_msg, e_msg = str(t_exc.value), str(e_exc.value)
    # the first line of the message is torch's
    assert e_msg.split("\n")[0] == t_msg.split("\n")[0]


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_zero_dof_warns_like_torch(name):
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
            r = getattr(lib, name)(lib.ones(1))
        v = r[0] if isinstance(r, tuple) else r
        assert np.isnan(v.item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.var(ember.ones(2))


# ---- second derivatives -----------------------------------------------------------------
@pytest.mark.parametrize("fn,data", [
    (lambda x: x.prod(), [[2.0, 0.5], [1.5, -1.0]]),
    (lambda x: x.prod(1), [[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.5, -2.0, 0.5]]),
    (lambda x: x.cumprod(1), [[2.0, 0.0, 3.0, 0.5], [1.5, -2.0, 0.5, 3.0]]),
    (lambda x: x.cumsum(0), [[2.0, 0.1], [1.5, -2.0]]),
    (lambda x: x.logcumsumexp(1), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.logsumexp(1), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.std(1), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.var(), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.norm(), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.norm(3, 1), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.amax(1) * x.amin(0).sum(), [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.max(1)[0] ** 2, [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.sort(1)[0] ** 2, [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.topk(2)[0] ** 2, [[2.0, 0.1, -1.0], [1.5, -2.0, 3.0]]),
    (lambda x: x.cummax(1)[0] ** 2, [[2.0, 0.1, 3.0], [1.5, -2.0, 3.0]]),
    (lambda x: ember.quantile(x, 0.3, dim=1) ** 2, [[2.0, 0.1, 3.0], [1.5, -2.0, 3.0]]),
])
def test_gradgradcheck(fn, data):
    x = E(data, requires_grad=True)
    assert ember.autograd.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


def test_second_derivative_values_match_torch():
    data = [[2.0, 0.0, 3.0, 0.5], [1.5, -2.0, 0.5, 3.0]]
    out = []
    for lib, mk in ((ember, E), (torch, T)):
        x = mk(data, requires_grad=True)
        y = (x.cumprod(1) ** 2).sum() + x.prod(1).sum() + x.logsumexp(1).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        h, = lib.autograd.grad((g * mk([[1.0, 2, 3, 4], [5, 6, 7, 8]])).sum(), x)
        out.append((g, h))
    same(out[0][0], out[1][0])
    same(out[0][1], out[1][1])


# ---- ties, NaN and numerics -------------------------------------------------------------
def test_tie_breaking_matches_torch():
    ties = [[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, 0.0, -1.0, -1.0, 5.0]]
    for f in (lambda lib, x: lib.max(x, 1).indices, lambda lib, x: lib.min(x, 1).indices,
              lambda lib, x: lib.argmax(x, 1), lambda lib, x: lib.argmin(x),
              lambda lib, x: lib.cummax(x, 1).indices, lambda lib, x: lib.cummin(x, 1).indices,
              lambda lib, x: lib.mode(x, 1).indices,
              lambda lib, x: lib.sort(x, dim=1, stable=True, descending=True).indices):
        same(f(ember, E(ties)), f(torch, T(ties)))


def test_evenly_split_gradient_on_ties():
    data = [[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]]
    for f in (lambda x: x.max(), lambda x: x.amax(1), lambda x: x.amin((0, 1)),
              lambda x: x.median(), lambda x: x.norm(float("inf"), 1),
              lambda x: ember_or_torch(x).aminmax(x, dim=1).max):
        e, t = E(data, requires_grad=True), T(data, requires_grad=True)
        f(e).sum().backward()
        f(t).sum().backward()
        same(e.grad, t.grad)


def ember_or_torch(x):
    return ember if isinstance(x, ember.Tensor) else torch


def test_logsumexp_and_logcumsumexp_are_stable():
    data = [[1000.0, 1000.0, -1000.0], [-1e4, -1e4, -1e4]]
    same(ember.logsumexp(E(data, "float32"), 1), torch.logsumexp(T(data, "float32"), 1))
    same(ember.logcumsumexp(E(data, "float32"), 1), torch.logcumsumexp(T(data, "float32"), 1))
    e, t = E(data, requires_grad=True), T(data, requires_grad=True)
    ember.logcumsumexp(e, 1).sum().backward()
    torch.logcumsumexp(t, 1).sum().backward()
    same(e.grad, t.grad)


def test_nuclear_norm_and_gradient_match_torch():
    data = np.random.default_rng(0).normal(size=(2, 3, 4)).tolist()
    e, t = E(data, requires_grad=True), T(data, requires_grad=True)
    ye, yt = ember.norm(e, "nuc", (1, 2)), torch.norm(t, "nuc", (1, 2))
    same(ye, yt)
    ye.sum().backward()
    yt.sum().backward()
    same(e.grad, t.grad)


def test_sum_of_empty_and_dtype_rules():
    same(ember.sum(ember.empty(0)), torch.sum(torch.empty(0)))
    same(ember.prod(ember.empty(0, dtype=ember.int8)), torch.prod(torch.empty(0, dtype=torch.int8)))
    same(ember.sum(E([True, True], "bool")), torch.sum(T([True, True], "bool")))
    same(ember.any(E([0, 2], "uint8")), torch.any(T([0, 2], "uint8")))
    same(ember.cumsum(E([1, 2], "int8"), 0), torch.cumsum(T([1, 2], "int8"), 0))
    same(ember.argmax(E([[1, 4], [5, 0]], "int16")), torch.argmax(T([[1, 4], [5, 0]], "int16")))


def test_unique_and_histogram_family_match_torch():
    rng = np.random.default_rng(1)
    data = rng.integers(0, 5, size=(4, 6)).tolist()
    for f in (lambda lib, x: lib.unique(x, return_inverse=True, return_counts=True),
              lambda lib, x: lib.unique(x, dim=1, return_inverse=True),
              lambda lib, x: lib.unique_consecutive(x.flatten(), return_counts=True),
              lambda lib, x: lib.bincount(x.flatten(), minlength=7),
              lambda lib, x: lib.histc(x.double(), bins=3),
              lambda lib, x: lib.bucketize(x, lib.tensor([1, 3]), right=True)):
        for e, t in zip(f(ember, E(data, "int64")), f(torch, T(data, "int64"))):
            same(e, t)
