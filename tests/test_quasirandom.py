"""quasirandom.SobolEngine against torch's: the same state, shift and points, bit for bit
(unscrambled; scrambled with a seed or from the global RNG), through draw, draw_base2,
fast_forward, reset, out= and dtypes, and torch's errors."""
import numpy as np
import pytest
import torch

import ember


def _same(a, b):
    a, b = a.numpy(), b.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("d", [1, 3, 17, 1200])
@pytest.mark.parametrize("scramble, seed", [(False, None), (True, 5), (True, None)])
def test_sobol_matches_torch(d, scramble, seed):
    torch.manual_seed(11)
    ember.manual_seed(11)
    T = torch.quasirandom.SobolEngine(d, scramble=scramble, seed=seed)
    E = ember.quasirandom.SobolEngine(d, scramble=scramble, seed=seed)
    _same(E.sobolstate, T.sobolstate)
    _same(E.shift, T.shift)
    _same(E.draw(1), T.draw(1))
    _same(E.draw(5, dtype=ember.float64), T.draw(5, dtype=torch.float64))
    _same(E.draw(70), T.draw(70))
    E.fast_forward(9)
    T.fast_forward(9)
    _same(E.draw(3), T.draw(3))
    E.reset()
    T.reset()
    _same(E.draw_base2(4), T.draw_base2(4))
    E.reset().fast_forward(3)
    T.reset().fast_forward(3)
    _same(E.draw(4, dtype=ember.float64), T.draw(4, dtype=torch.float64))
    eo, to = ember.empty(1), torch.empty(1)
    assert E.draw(2, out=eo) is eo and T.draw(2, out=to) is to
    _same(eo, to)
    assert (repr(E), E.num_generated) == (repr(T), T.num_generated)
    # the global RNG moved the same way
    _same(ember.rand(3), torch.rand(3))


def test_sobol_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match=r"Supported range of dimensionality for "
                                             r"SobolEngine is \[1, 21201\]"):
            lib.quasirandom.SobolEngine(0)
        e = lib.quasirandom.SobolEngine(2)
        e.draw(3)
        with pytest.raises(ValueError, match="require n to be a power of 2. 3 points"):
            e.draw_base2(2)
