"""torch.autograd.graph.allow_mutation_on_saved_tensors against torch: in-place writes to
saved tensors (and views of them) leave the gradients of the forward's values; errors."""
import numpy as np
import pytest

import ember

import torch


def _run(lib, program):
    g = lib.autograd.graph
    with g.allow_mutation_on_saved_tensors() as ctx:
        a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        program(lib, a)
        assert type(ctx).__name__ == "_AllowMutationOnSavedContext"
    return a.grad.numpy()


PROGRAMS = [
    lambda lib, a: ((lambda b: ((b ** 2).sum(), b.sin_())[0])(a.clone())).backward(),
    lambda lib, a: ((lambda c: ((c * c).sum(), c[:2].mul_(10))[0])(a.clone())).backward(),
    lambda lib, a: ((lambda c: (c.exp().sum() + (c * 3).tanh().sum(), c.zero_(),
                                c.add_(1))[0])(a.clone())).backward(),
    lambda lib, a: ((lambda c: ((c.sigmoid() * c).sum(), c.copy_(lib.ones(3)))[0])(
        a.clone())).backward(),
]


@pytest.mark.parametrize("k", range(len(PROGRAMS)))
def test_gradients_use_values_before_the_write(k):
    np.testing.assert_allclose(_run(ember, PROGRAMS[k]), _run(torch, PROGRAMS[k]), rtol=1e-6)


def test_errors():
    msgs = []
    for lib in (torch, ember):
        g = lib.autograd.graph
        with g.allow_mutation_on_saved_tensors():
            a = lib.ones(3, requires_grad=True)
            out = (a.clone() ** 2).sum()
        with pytest.raises(AssertionError) as e:
            out.backward()
        msgs.append(str(e.value))
        with g.allow_mutation_on_saved_tensors():
            with pytest.raises(RuntimeError, match="cannot be nested"):
                with g.allow_mutation_on_saved_tensors():
                    pass
        # outside the block the usual check stands
        b = lib.ones(3, requires_grad=True).clone()
        out = (b ** 2).sum()
        b.sin_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()
    assert msgs[0] == msgs[1]
