"""ember.__version__ is a TorchVersion as torch's: a str that compares as a version
against strings, tuples and packaging Versions (checked pair by pair against torch's)."""
import operator

import pytest
import torch
from torch.torch_version import TorchVersion as TV

import ember
from ember.torch_version import TorchVersion as EV

_MINE = ["2.13.0+ember", "2.13.0+cpu", "2.13.0", "1.10.0a0+git1a2b", "2.1.0rc1",
         "2.0.0.dev20230101", "1.13.1+cu117", "2.0.post1", "2.0.0b2", "1.0-1", "parrot", "2!1.0", "2.13.0+local.7"]
_OTHERS = ["2.13", "2.9", "2.13.0", "2.13.1", "2.13.0+cpu", "2.13.0+ember", "1.10", "2.0",
           "2.0.0rc1", "2.0.0a0", "2.0.0.dev1", "2.0.post1", "2.1.0rc2", "10", "zzz", "2!0.5",
           (2, 1), (2, 13), (2, 13, 0), (2, 14), (1,), [2, 0, 0]]


@pytest.mark.parametrize("mine", _MINE)
def test_comparisons_match_torch(mine):
    t, e = TV(mine), EV(mine)
    for other in _OTHERS:
        for op in (operator.eq, operator.ne, operator.lt, operator.le, operator.gt,
                   operator.ge):
            try:
                want = op(t, other)
            except TypeError:
                with pytest.raises(TypeError):
                    op(e, other)
                continue
            assert op(e, other) == want, (mine, op, other)


def test_version_attribute_and_packaging_versions():
    from packaging.version import Version
    v = ember.__version__
    assert isinstance(v, str) and isinstance(v, EV) and v == "2.13.0+ember"
    assert type(ember.version.__version__) is str and type(torch.version.__version__) is str
    assert v >= (2, 1) and v > "2.9" and v < "2.14" and not v < (2, 13)
    assert v > Version("2.12") and v >= Version("2.13.0")
    assert hash(v) == hash("2.13.0+ember") and {v: 1}["2.13.0+ember"] == 1
    assert v.split("+")[0] == "2.13.0" and f"{v}" == "2.13.0+ember"
