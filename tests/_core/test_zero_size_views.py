"""A zero-size view shares no byte with its source, yet torch makes it a view (``_base`` is
the source's root, its version counter shared): ``x[5:5]``, ``x[:0]``, an expand to size 0,
a view of a zero-size tensor."""
import pytest
import torch

import ember

VIEWS = ["x[5:5]", "x[:0]", "x.view(3, 4)[:, 2:2]", "x[12:]", "z.view(3, 0)", "o.expand(0)",
         "z.t()", "z[1:]"]


@pytest.mark.parametrize("expr", VIEWS)
def test_zero_size_views_are_views(expr):
    for lib in (ember, torch):
        x = lib.arange(12.)
        z = lib.ones(0, 3)
        o = lib.ones(1)
        v = eval(expr)
        root = {"x": x, "z": z, "o": o}[expr.lstrip("(")[0]]
        assert v.numel() == 0 and v._base is root, (lib.__name__, expr)


def test_a_zero_size_copy_is_not_a_view():
    for lib in (ember, torch):
        assert lib.ones(0, 3).clone()._base is None
        assert (lib.ones(0, 3) + 1)._base is None
