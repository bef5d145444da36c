"""Replay of modules whose methods read closure variables (classes defined inside a
factory function, as benchmark and tutorial models often are): the cells are guarded, so
the call replays, and rebinding a variable makes the Python run again."""
import numpy as np
import pytest

import ember
from test_training_step_replay import python_runs  # noqa: F401  (the fixture)


def _factory(scale):
    nn = ember.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) * scale

        def rescale(self, new):
            nonlocal scale
            scale = new
    return Block()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_methods_reading_closure_cells_replay_and_follow_a_rebinding(backend, python_runs):
    ember._dynamo.reset()
    ember.manual_seed(0)
    block = _factory(2.0)
    f = ember.compile(block, backend=backend)
    x = ember.randn(3, 4)
    for _ in range(4):
        np.testing.assert_allclose(f(x).detach().numpy(), (block.lin(x) * 2.0).detach().numpy(),
                                   rtol=1e-6)
    assert python_runs[0] == 1   # the first call ran the Python; the others replayed
    block.rescale(3.0)   # the cell now holds another value: the guard fails, Python runs
    np.testing.assert_allclose(f(x).detach().numpy(), (block.lin(x) * 3.0).detach().numpy(),
                               rtol=1e-6)
    assert python_runs[0] >= 2
