"""Recording a node takes spelled-out paths for one and two operands and a loop for more;
the dispatcher likewise unwraps one plain Tensor or two operands inline and loops otherwise.

Each path must give the general one's graph: the same edges (``next_functions``), the same
gradients, and the same error when a saved input was modified in place.  Every test runs
each operand pattern (tensor/scalar order, which operands require grad, Parameters, three
operands, ops that save some inputs, none, or their output) in ember and torch.
"""
import numpy as np
import pytest
import torch

import ember


def _leaf(lib, seed, shape=(3, 4), requires_grad=True):
    a = np.random.default_rng(seed).standard_normal(shape)
    return lib.tensor(a, requires_grad=requires_grad)


# each program takes (lib, a, b, c): a and b require grad, c does not
PROGRAMS = {
    "tensor*tensor": lambda lib, a, b, c: a * b,
    "tensor*scalar": lambda lib, a, b, c: a * 1.5,
    "scalar*tensor": lambda lib, a, b, c: 1.5 * a,
    "scalar-tensor": lambda lib, a, b, c: 2 - b,
    "tensor/nograd": lambda lib, a, b, c: a / (c + 3),
    "nograd*tensor": lambda lib, a, b, c: c * b,
    "tanh (saves output)": lambda lib, a, b, c: (a * b).tanh(),
    "sin (saves input)": lambda lib, a, b, c: (a + b).sin(),
    "neg (saves nothing)": lambda lib, a, b, c: -(a - b),
    "sum with dim": lambda lib, a, b, c: (a * b).sum(1),
    "addcmul (3 operands)": lambda lib, a, b, c: lib.addcmul(a, b, c, value=0.5),
    "where (saves input 0)": lambda lib, a, b, c: lib.where(c > 0, a, b),
    "index_select (saves input 1)": lambda lib, a, b, c: (a * b).index_select(
        1, lib.tensor([2, 0, 2])),
    "parameters": lambda lib, a, b, c: lib.nn.Parameter(a.detach() * 1) *
    lib.nn.Parameter(b.detach() * 1),
}


def _run(lib, program, seed=0):
    a, b = _leaf(lib, seed), _leaf(lib, seed + 1)
    c = _leaf(lib, seed + 2, requires_grad=False)
    out = program(lib, a, b, c)
    return a, b, out


def _edges(fn, leaves):
    """``fn``'s edges: the index in ``leaves`` of each leaf reached directly, 'node' for an
    op's node, None for an operand that needs no gradient."""
    out = []
    for f, _ in fn.next_functions:
        if f is None:
            out.append(None)
        elif type(f).__name__ == "AccumulateGrad":
            out.append([i for i, t in enumerate(leaves) if t is f.variable][0])
        else:
            out.append("node")
    return out


@pytest.mark.parametrize("name", PROGRAMS)
def test_recorded_graph_and_gradients_match_torch(name):
    program = PROGRAMS[name]
    ea, eb, eo = _run(ember, program)
    ta, tb, to = _run(torch, program)
    # edges as the general loop makes them: one per operand, None for those that need no
    # gradient (torch names and counts some nodes' operands otherwise, so no comparison)
    assert eo.requires_grad and to.requires_grad
    expected = {"tensor*tensor": [0, 1], "tensor*scalar": [0, None],
                "scalar*tensor": [None, 0], "scalar-tensor": [None, 1],
                "tensor/nograd": [0, None], "nograd*tensor": [None, 1],
                "addcmul (3 operands)": [0, 1, None], "where (saves input 0)": [None, 0, 1]}
    if name in expected:
        assert _edges(eo.grad_fn, [ea, eb]) == expected[name]
    g = np.random.default_rng(7).standard_normal(tuple(to.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    for e, t in ((ea, ta), (eb, tb)):
        if t.grad is None:
            assert e.grad is None
        else:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


# in-place writes after recording into an input the node saved: (program, which to write)
MODIFIED = {
    "first operand, second a tensor": (lambda x, y: x * y, 0),
    "second operand, first a tensor": (lambda x, y: x * y, 1),
    "first operand, second a scalar": (lambda x, y: x ** 2.0, 0),
    "second operand, first a scalar": (lambda x, y: 2.0 ** y, 1),
    "one operand": (lambda x, y: x.sin(), 0),
    "three operands": (lambda x, y: x.addcmul(y, y), 1),
    "output": (lambda x, y: x.exp(), None),
}


@pytest.mark.parametrize("name", MODIFIED)
def test_modified_saved_input_raises_as_torch(name):
    program, which = MODIFIED[name]
    msgs = []
    for lib in (ember, torch):
        a, b = _leaf(lib, 3), _leaf(lib, 4)
        x, y = a * 1, b * 1  # non-leaves: in-place writes are allowed
        out = program(x, y)
        target = out if which is None else (x, y)[which]
        with lib.no_grad():
            target.add_(1)
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        msgs.append(str(info.value))
    assert all("modified by an inplace operation" in m for m in msgs), msgs
    # the message names the version the tensor is at and the one the node saved
    assert msgs[0].split("is at version")[1][:3] == msgs[1].split("is at version")[1][:3]


def test_unmodified_second_backward_with_retain_graph_matches_torch():
    res = []
    for lib in (ember, torch):
        a, b = _leaf(lib, 5), _leaf(lib, 6)
        out = (2.0 * (a * b)).tanh().sum()
        out.backward(retain_graph=True)
        out.backward()
        res.append((a.grad.numpy().copy(), b.grad.numpy().copy()))
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)


def test_node_fields_nobody_set_are_the_defaults():
    a = _leaf(ember, 0)
    fn = (a * 2).grad_fn
    assert fn.metadata == {} and fn.metadata is fn.metadata
    assert fn.pre_hooks is None and fn.post_hooks is None and not fn.released
    h = fn.register_prehook(lambda g: None)
    assert len(fn.pre_hooks) == 1
    assert (a * 3).grad_fn.pre_hooks is None  # a hook is the node's own, not its class's
    h.remove()


def test_accumulate_grad_variable_is_the_leaf_as_in_torch():
    for lib in (ember, torch):
        a = _leaf(lib, 0)
        acc = (a * 2).grad_fn.next_functions[0][0]
        assert type(acc).__name__ == "AccumulateGrad" and acc.variable is a


def _double(lib):
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2
    return Double


@pytest.mark.parametrize("kind", ["op", "custom Function"])
def test_second_backward_raises_and_released_reads_true(kind):
    msgs = []
    for lib in (ember, torch):
        a = _leaf(lib, 1)
        out = (a.sin() if kind == "op" else _double(lib).apply(a)).sum()
        fn = out.grad_fn.next_functions[0][0]
        out.backward()
        if lib is ember:
            assert fn.released
        with pytest.raises(RuntimeError) as info:
            out.backward()
        msgs.append(str(info.value))
    assert all("backward through the graph a second time" in m for m in msgs)


def test_hooks_registered_after_recording_run_as_torchs():
    res = []
    for lib in (ember, torch):
        seen = []
        a = _leaf(lib, 2)
        b = a * 3
        c = b.tanh()
        c.retain_grad()
        c.grad_fn.register_prehook(lambda g: seen.append("pre"))
        c.grad_fn.register_hook(lambda gi, go: seen.append("post"))
        b.register_hook(lambda g: g * 10)
        c.sum().backward()
        res.append((seen, a.grad.numpy().copy(), c.grad.numpy().copy()))
    assert res[0][0] == res[1][0] == ["pre", "post"]
    for e, t in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)
