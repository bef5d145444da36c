"""torch.autograd.graph (Node, GradientEdge, get_gradient_edge, increment_version) and
set_multithreading_enabled, against torch."""
import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_gradient_edge_of_non_leaf_and_leaf(lib):
    a = lib.ones(3, requires_grad=True)
    b = a * 2
    e = lib.autograd.graph.get_gradient_edge(b)
    assert isinstance(e, lib.autograd.graph.GradientEdge) and isinstance(e, tuple)
    assert e.node is b.grad_fn and e.output_nr == 0
    assert isinstance(b.grad_fn, lib.autograd.graph.Node)
    leaf = lib.autograd.graph.get_gradient_edge(a)
    assert type(leaf.node).__name__ == "AccumulateGrad" and leaf.output_nr == 0
    assert isinstance(leaf.node, lib.autograd.graph.Node)
    # the leaf's edge is the node b's backward feeds
    assert b.grad_fn.next_functions[0][0] is leaf.node

    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    p, q = Two.apply(a)
    second = lib.autograd.graph.get_gradient_edge(q)
    assert second.output_nr == 1 and second.node is q.grad_fn is p.grad_fn
    with pytest.raises(RuntimeError, match="does not require gradients"):
        lib.autograd.graph.get_gradient_edge(lib.ones(2))


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_increment_version_trips_saved_tensor_check(lib):
    a = lib.ones(3, requires_grad=True)
    w = lib.full((3,), 2.0)
    y = (a * w).sum()  # saves w for a's gradient
    lib.autograd.graph.increment_version(w)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    w2 = lib.full((3,), 2.0)
    y2 = (a * w2).sum()
    lib.autograd.graph.increment_version([lib.ones(1)])  # other tensors: no effect on w2
    y2.backward()
    assert a.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_set_multithreading_enabled_modes(lib):
    a = lib.ones(2, requires_grad=True)
    with lib.autograd.set_multithreading_enabled(False):
        (a * 3).sum().backward()

    @lib.autograd.grad_mode.set_multithreading_enabled(False)
    def step():
        (a * 2).sum().backward()
    step()
    assert a.grad.tolist() == [5.0, 5.0]
