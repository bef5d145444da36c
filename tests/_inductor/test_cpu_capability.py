"""Every CPU capability level this CPU supports builds the generated kernels, and they
agree (the level decides the instruction set and is part of the cache key)."""
import numpy as np
import pytest

import ember.nn.functional as F
from ember._core import cpu_capability
from ember._inductor import build

from .helpers import check, rand


@pytest.mark.parametrize("level", cpu_capability.supported_levels())
def test_levels_agree(level, monkeypatch):
    assert build.compiler_available("auto"), "no C compiler found"
    monkeypatch.setenv("EMBER_CPU_CAPABILITY", level)
    x, w, b = rand(33, 70), rand(70, seed=1), rand(70, seed=2)
    fn = lambda x, w, b: (F.layer_norm(x, (70,), w, b), F.softmax(x, -1),  # noqa: E731
                          F.gelu(x).sum(0), (x.exp() * 0.5).sigmoid())
    c = check(fn, x, w, b)
    assert c.backend == "c" and build.LAST.get("cpu_capability") == level
    if level != cpu_capability.DEFAULT:
        monkeypatch.setenv("EMBER_CPU_CAPABILITY", cpu_capability.DEFAULT)
        base = check(fn, x, w, b)
        for got, want in zip(c(x, w, b), base(x, w, b)):
            np.testing.assert_allclose(np.asarray(got._data), np.asarray(want._data),
                                       rtol=1e-5, atol=1e-6)
