"""What mul/div/add/sub/neg save for backward, against torch: only the inputs the wanted
gradients read (``x * b`` with ``b`` needing no gradient saves ``b`` alone, ``x * 2.0`` the
scalar alone), so an in-place write to an unsaved input between forward and backward works
and gives torch's gradients, and a write to a saved one raises torch's error.  ``2.0 / x`` is
``x.reciprocal() * 2.0`` as in torch (its values and its graph)."""
import numpy as np
import pytest
import torch

import ember

# each program: (lib, x, b, w) -> output; x requires grad (a non-leaf, so writable in
# place), b does not, w does (a leaf)
PROGRAMS = {
    "x * 2.0": lambda lib, x, b, w: x * 2.0,
    "2.0 * x": lambda lib, x, b, w: 2.0 * x,
    "x / 2.0": lambda lib, x, b, w: x / 2.0,
    "2.0 / x": lambda lib, x, b, w: 2.0 / x,
    "3 / x": lambda lib, x, b, w: 3 / x,
    "x * b": lambda lib, x, b, w: x * b,
    "b * x": lambda lib, x, b, w: b * x,
    "x / b": lambda lib, x, b, w: x / b,
    "b / x": lambda lib, x, b, w: b / x,
    "mul(x, b)": lambda lib, x, b, w: lib.mul(x, b),
    "div(x, b)": lambda lib, x, b, w: lib.div(x, b),
    "x + b": lambda lib, x, b, w: x + b,
    "x - b": lambda lib, x, b, w: x - b,
    "2.0 - x": lambda lib, x, b, w: 2.0 - x,
    "add(x, b, alpha=2)": lambda lib, x, b, w: lib.add(x, b, alpha=2),
    "-x": lambda lib, x, b, w: -x,
    "x * w": lambda lib, x, b, w: x * w,
    "w * x": lambda lib, x, b, w: w * x,
    "x / w": lambda lib, x, b, w: x / w,
    "w / x": lambda lib, x, b, w: w / x,
    "x * x": lambda lib, x, b, w: x * x,
}

# which operand the in-place write goes to
TARGETS = ("x", "b")


def _run(lib, name, target):
    rng = np.random.default_rng(0)
    leaf = lib.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    w = lib.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    b = lib.tensor(rng.uniform(0.5, 2.0, (3, 4)))
    x = leaf * 1.5
    out = PROGRAMS[name](lib, x, b, w)
    with lib.no_grad():
        (x if target == "x" else b).add_(0.25)
    g = lib.tensor(rng.standard_normal((3, 4)))
    try:
        out.backward(g)
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e), str(e)
        return "raises", out
    return (leaf.grad.numpy().copy(), None if w.grad is None else w.grad.numpy().copy()), out


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_inplace_write_before_backward_as_torch(name, target):
    expected, tout = _run(torch, name, target)
    got, eout = _run(ember, name, target)
    if isinstance(expected, str):
        assert got == expected
        return
    assert not isinstance(got, str), f"ember raised where torch computed {expected}"
    np.testing.assert_allclose(eout.detach().numpy(), tout.detach().numpy(), rtol=1e-15)
    for e, t in zip(got, expected):
        if t is None:
            assert e is None
        else:
            np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-15)


def test_unwritten_inputs_still_give_torch_gradients_for_both_operands():
    # both operands need gradients: both are saved, and backward (twice, with create_graph)
    # matches torch
    res = []
    for lib in (ember, torch):
        rng = np.random.default_rng(1)
        a = lib.tensor(rng.uniform(0.5, 2, 5), requires_grad=True)
        c = lib.tensor(rng.uniform(0.5, 2, 5), requires_grad=True)
        y = (a * c / (c + a)).sum()
        ga, gc = lib.autograd.grad(y, (a, c), create_graph=True)
        hh = lib.autograd.grad((ga * gc).sum(), (a, c))
        res.append([t.detach().numpy() for t in (ga, gc) + hh])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-12)


def test_rtruediv_values_are_torchs_reciprocal_then_product():
    x = np.random.default_rng(2).uniform(0.1, 10, 1000).astype(np.float32)
    for other in (3.0, 7, -0.3):
        e = (other / ember.tensor(x)).numpy()
        t = (other / torch.tensor(x)).numpy()
        np.testing.assert_array_equal(e, t)
    assert (2 / ember.tensor([4])).dtype == ember.float32
    assert torch.tensor([1.0]).__rtruediv__([1]) is NotImplemented
    assert ember.tensor([1.0]).__rtruediv__([1]) is NotImplemented
    with pytest.raises(TypeError):
        [1, 2] / ember.tensor([1.0, 2.0])


def test_saved_tensors_hooks_pack_only_what_torch_saves():
    counts = []
    for lib in (ember, torch):
        packed = []

        def pack(t):
            packed.append(tuple(t.shape))
            return t
        x = lib.ones(2, 3, requires_grad=True)
        b = lib.ones(3)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            (x * b).sum().backward()
        counts.append(sorted(packed))
    assert counts[0] == counts[1] == [(3,)]
