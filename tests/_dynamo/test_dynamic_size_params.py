"""Sizes that reach an operator as a Python value (``arange(x.shape[1])``, ``view(-1, 2)``)
stay symbolic in compiled graphs: every backend, and a user backend that runs the graph
module's code as it is, gives the right result at every size (a graph that baked the
first size in returned wrong shapes)."""
import numpy as np
import pytest
import torch

import ember


def _arange_of_size(lib):
    def f(idx):
        return idx.sum() + lib.arange(idx.shape[1])
    return f


def _positions(lib):
    def f(idx, w):
        return w[lib.arange(idx.shape[1])] + idx.sum()
    return f


def _runs_code(gm, example_inputs):
    return gm.forward


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor", _runs_code])
@pytest.mark.parametrize("dynamic", [None, True])
def test_a_size_read_into_an_op_argument_follows_the_input(backend, dynamic):
    ember._dynamo.reset()
    f = ember.compile(_arange_of_size(ember), backend=backend, dynamic=dynamic)
    g = ember.compile(_positions(ember), backend=backend, dynamic=dynamic)
    w = np.random.default_rng(0).standard_normal((16, 3)).astype(np.float32)
    for t in (8, 5, 6, 7):
        idx = np.ones((2, t), np.float32)
        want = _arange_of_size(torch)(torch.tensor(idx))
        np.testing.assert_array_equal(f(ember.tensor(idx)).numpy(), want.numpy())
        want = _positions(torch)(torch.tensor(idx), torch.tensor(w))
        np.testing.assert_allclose(g(ember.tensor(idx), ember.tensor(w)).numpy(),
                                   want.numpy(), rtol=1e-6)


def test_graph_code_reads_symbolic_sizes_from_its_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append(gm.code)
        return gm.forward
    f = ember.compile(lambda x: x.view(-1, 2) * 2, backend=backend, dynamic=True)
    for n in (8, 5, 6):
        x = ember.randn(n, 4)
        np.testing.assert_array_equal(f(x).numpy(), (x.view(-1, 2) * 2).numpy())
    assert len(seen) == 1 and "s0 = l_x.shape[0]" in seen[0], seen
