"""torch._foreach_* (multi-tensor operators optimizer libraries call), against torch."""
import numpy as np
import pytest
import torch

import ember

UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
         "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
         "trunc").split()
BINARY = "add sub mul div clamp_min clamp_max maximum minimum pow".split()


def _lists(lib, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    arrs = [rng.uniform(0.1 if positive else -0.9, 0.9, s) for s in [(3,), (2, 4), ()]]
    return [lib.tensor(a, dtype=lib.float64) for a in arrs]


def _np(ts):
    assert isinstance(ts, (list, tuple))
    return [t.detach().numpy().copy() for t in ts]


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", UNARY)
def test_unary_out_of_place_and_in_place(name):
    res = {}
    for lib in (torch, ember):
        xs = _lists(lib, positive=name in ("log", "log10", "log2", "rsqrt", "sqrt", "lgamma"))
        out = getattr(lib, f"_foreach_{name}")(xs)
        assert type(out) is tuple
        ret = getattr(lib, f"_foreach_{name}_")(xs)
        assert ret is xs
        res[lib] = (_np(out), _np(xs))
    _same(res[torch][0], res[ember][0])
    _same(res[torch][1], res[ember][1])


def _operands(lib, kind):
    if kind == "list":
        return _lists(lib, 1, positive=True)
    if kind == "scalar":
        return 0.5
    if kind == "scalarlist":
        return [0.5, -1.5, 2]
    return lib.tensor(0.75, dtype=lib.float64)  # a single 0-dim tensor


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("kind", ["list", "scalar", "scalarlist", "tensor"])
def test_binary_forms(name, kind):
    res = {}
    for lib in (torch, ember):
        xs = _lists(lib, positive=name == "pow")
        f, fi = getattr(lib, f"_foreach_{name}"), getattr(lib, f"_foreach_{name}_")
        try:
            out = f(xs, _operands(lib, kind))
        except (RuntimeError, TypeError) as e:
            res[lib] = type(e)
            continue
        assert fi(xs, _operands(lib, kind)) is xs
        res[lib] = (_np(out), _np(xs))
    if isinstance(res[torch], type):
        assert res[ember] is res[torch]
        return
    _same(res[torch][0], res[ember][0])
    _same(res[torch][1], res[ember][1])


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha(name):
    outs = [getattr(lib, f"_foreach_{name}")(_lists(lib), _lists(lib, 2), alpha=-2.5)
            for lib in (torch, ember)]
    _same(_np(outs[0]), _np(outs[1]))
    for lib in (torch, ember):  # alpha with a scalar operand: torch's TypeError
        with pytest.raises(TypeError):
            getattr(lib, f"_foreach_{name}")(_lists(lib), 1.0, alpha=2)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
@pytest.mark.parametrize("value", ["default", 0.25, [0.5, -1.0, 2.0], "tensor"])
def test_pointwise_with_value(name, value):
    res = []
    for lib in (torch, ember):
        xs, t1, t2 = _lists(lib), _lists(lib, 1), _lists(lib, 2, positive=True)
        v = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64) if value == "tensor" else value
        args = () if value == "default" else (v,)
        out = getattr(lib, f"_foreach_{name}")(xs, t1, t2, *args)
        assert getattr(lib, f"_foreach_{name}_")(xs, t1, t2, *args) is xs
        res.append((_np(out), _np(xs)))
    _same(res[0][0], res[1][0])
    _same(res[0][1], res[1][1])


@pytest.mark.parametrize("weight", [0.3, "list", [0.1, 0.5, 0.9], "tensor"])
def test_lerp(weight):
    res = []
    for lib in (torch, ember):
        xs, ends = _lists(lib), _lists(lib, 1)
        w = {"list": _lists(lib, 3, positive=True),
             "tensor": lib.tensor(0.25, dtype=lib.float64)}.get(weight, weight) \
            if isinstance(weight, str) else weight
        out = lib._foreach_lerp(xs, ends, w)
        assert lib._foreach_lerp_(xs, ends, w) is xs
        res.append((_np(out), _np(xs)))
    _same(res[0][0], res[1][0])
    _same(res[0][1], res[1][1])


@pytest.mark.parametrize("ord", [2, 1, float("inf"), 3.5])
def test_norm_max(ord):
    outs = [lib._foreach_norm(_lists(lib), ord) for lib in (torch, ember)]
    _same(_np(outs[0]), _np(outs[1]))
    assert all(t.dim() == 0 for t in outs[1])
    outs = [lib._foreach_norm([t.float() for t in _lists(lib)], ord, dtype=lib.float64)
            for lib in (torch, ember)]
    assert all(t.dtype == ember.float64 for t in outs[1])
    _same(_np(outs[0]), _np(outs[1]))
    outs = [lib._foreach_max(_lists(lib)) for lib in (torch, ember)]
    _same(_np(outs[0]), _np(outs[1]))


def test_pow_scalar_base_zero_copy_clone():
    res = []
    for lib in (torch, ember):
        xs = _lists(lib)
        p = lib._foreach_pow(2.0, xs)
        c = lib._foreach_clone(xs)
        assert all(a is not b for a, b in zip(c, xs))
        ys = _lists(lib, 5)
        assert lib._foreach_copy_(ys, xs) is ys
        zs = _lists(lib, 6)
        assert lib._foreach_zero_(zs) is zs
        res.append(_np(p) + _np(c) + _np(ys) + _np(zs))
    _same(res[0], res[1])


def test_gradients_flow_through_out_of_place_forms():
    grads = []
    for lib in (torch, ember):
        xs = [t.requires_grad_() for t in _lists(lib, positive=True)]
        ys = lib._foreach_mul(lib._foreach_exp(xs), 3.0)
        zs = lib._foreach_addcmul(ys, xs, xs, 0.5)
        sum(lib._foreach_norm(lib._foreach_lerp(zs, xs, 0.25))).backward()
        grads.append(_np([x.grad for x in xs]))
    _same(grads[0], grads[1])


def test_errors_match_torch():
    for lib in (torch, ember):
        xs = _lists(lib)
        with pytest.raises(RuntimeError, match="at least one tensor"):
            lib._foreach_add([], 1)
        with pytest.raises(RuntimeError, match="same number of tensors, got 3 and 1"):
            lib._foreach_add(xs, xs[:1])
        with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
            lib._foreach_mul(xs, [1.0])
        with pytest.raises(RuntimeError, match="scalar tensor expected to be 0 dim"):
            lib._foreach_add(xs, lib.ones(3, dtype=lib.float64))
        leaf = [lib.ones(2, requires_grad=True)]
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib._foreach_mul_(leaf, 2.0)
