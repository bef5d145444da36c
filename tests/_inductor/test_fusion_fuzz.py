"""Random programs of pointwise ops, row and column reductions, broadcasts, softmax and
transposes (fixed seeds): compiled equals eager, whatever groups the fuser forms."""
import random

import pytest

import ember.nn.functional as F
from ember._inductor import config

from .helpers import check, rand

_UNARY = [lambda t: t.exp(), lambda t: t.sin(), lambda t: t.abs().sqrt(), lambda t: t.sigmoid(),
          lambda t: t.tanh(), lambda t: -t, lambda t: t * 2 + 1, F.relu, F.gelu]


def _program(rng):
    def fn(x, y):
        vals = [x, y]
        for _ in range(rng.randint(2, 7)):
            a = vals[rng.randrange(len(vals))]
            k = rng.randint(0, 9)
            if k <= 3:
                v = _UNARY[rng.randrange(len(_UNARY))](a)
            elif k == 4:
                v = a + vals[rng.randrange(len(vals))]
            elif k == 5:
                v = a.sum(rng.choice([0, 1]), keepdim=True)
            elif k == 6:
                v = a.amax(rng.choice([0, 1]), keepdim=True) - a
            elif k == 7:
                v = F.softmax(a, rng.choice([0, -1]))
            elif k == 8:
                v = a * a.mean(rng.choice([0, 1]), keepdim=True)
            else:
                v = a.t() * 0.5
            vals.append(v)
        return tuple(vals[2:])
    return fn


def _case(seed):
    rng = random.Random(seed)
    n = rng.choice([1, 3, 8, 17, 64])
    return _program(random.Random(seed + 1)), rand(n, n, seed=seed), rand(n, n, seed=seed + 1)


@pytest.mark.parametrize("seed", range(40))
def test_numpy_kernels(seed, monkeypatch):
    monkeypatch.setattr(config, "cc", None)
    fn, x, y = _case(seed)
    check(fn, x, y)


@pytest.mark.parametrize("seed", range(100, 112))
@pytest.mark.parametrize("cpp_wrapper", [False, True])
def test_c_kernels(seed, cpp_wrapper, monkeypatch):
    monkeypatch.setattr(config, "cpp_wrapper", cpp_wrapper)
    fn, x, y = _case(seed)
    check(fn, x, y)
