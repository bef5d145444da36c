"""Number arguments (alpha, value, fill_value) and NumPy conversion of tensors that require
grad, against torch: a 0-dim tensor without grad reads as its number, anything else is torch's
TypeError (a tensor with history would silently lose its gradient)."""
import numpy as np
import pytest
import torch

import ember

CALLS = [
    ("add", lambda m, a: m.add(m.ones(3), m.ones(3), alpha=a)),
    ("sub_", lambda m, a: m.ones(3).sub_(m.ones(3), alpha=a)),
    ("add_", lambda m, a: m.ones(3).add_(m.ones(3), alpha=a)),
    ("addcmul", lambda m, a: m.addcmul(m.ones(3), m.full((3,), 2.0), m.ones(3), value=a)),
    ("addcdiv", lambda m, a: m.addcdiv(m.ones(3), m.full((3,), 2.0), m.ones(3), value=a)),
    ("addcmul_", lambda m, a: m.ones(3).addcmul_(m.full((3,), 2.0), m.ones(3), value=a)),
    ("full", lambda m, a: m.full((2,), a)),
    ("full_like", lambda m, a: m.full_like(m.ones(3), a)),
]
VALUES = {
    "0-dim": lambda m: m.tensor(3.0),
    "1-d": lambda m: m.tensor([3.0]),
    "0-dim-grad": lambda m: m.tensor(3.0, requires_grad=True),
    "numpy": lambda m: np.float64(3.0),
}


@pytest.mark.parametrize("which", list(VALUES))
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_number_argument_matches_torch(name, call, which):
    try:
        want = call(torch, VALUES[which](torch))
    except TypeError as e:
        with pytest.raises(TypeError) as got:
            call(ember, VALUES[which](ember))
        assert str(got.value) == str(e)
        return
    got = call(ember, VALUES[which](ember))
    assert got.dtype == getattr(ember, str(want.dtype).split(".")[1])
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("convert", [np.sqrt, np.asarray, np.array, lambda t: np.add(t, 1)],
                         ids=["sqrt", "asarray", "array", "add"])
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's own __array__/__array_wrap__
def test_numpy_refuses_a_tensor_that_requires_grad(convert):
    with pytest.raises(RuntimeError) as want:
        convert(torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError) as got:
        convert(ember.ones(2, requires_grad=True))
    assert str(got.value) == str(want.value)
    # without grad (or detached) the conversion works and keeps the values
    np.testing.assert_array_equal(np.asarray(convert(ember.ones(2, requires_grad=True).detach())),
                                  np.asarray(convert(torch.ones(2))))


LERP_CASES = [
    ("weight float64", lambda m: m.lerp(m.ones(5), m.ones(5), m.ones(5, dtype=m.float64))),
    ("lerp_ weight float64", lambda m: m.ones(5).lerp_(m.ones(5), m.ones(5, dtype=m.float64))),
    ("end float64", lambda m: m.lerp(m.ones(5), m.ones(5, dtype=m.float64), 0.5)),
    ("end 0-dim float64", lambda m: m.lerp(m.ones(5), m.tensor(1.0, dtype=m.float64), 0.5)),
    ("weight 0-dim float64", lambda m: m.lerp(m.ones(5), m.full((5,), 3.0),
                                              m.tensor(0.5, dtype=m.float64))),
    ("weight 1-d half", lambda m: m.lerp(m.ones(5), m.ones(5), m.tensor([0.5]).half())),
    ("double input, float weight", lambda m: m.lerp(m.ones(5, dtype=m.float64),
                                                    m.zeros(5, dtype=m.float64),
                                                    m.tensor(0.25))),
]


@pytest.mark.parametrize("name,call", LERP_CASES, ids=[c[0] for c in LERP_CASES])
def test_lerp_dtypes_match_torch(name, call):
    """lerp computes in input's dtype: ``end`` and a weight with dimensions must have it."""
    try:
        want = call(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            call(ember)
        assert str(got.value) == str(e)
        return
    got = call(ember)
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
