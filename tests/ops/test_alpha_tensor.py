"""``add``/``sub`` with a one-element tensor ``alpha`` use its number, as torch does (the
tensor never reaches the kernel, which on another backend would mix array types)."""
import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("fn", ["add", "sub"])
@pytest.mark.parametrize("alpha", [2.5, 3])
def test_tensor_alpha_is_its_number(fn, alpha):
    a = np.arange(4, dtype=np.float32)
    got = getattr(ember, fn)(ember.tensor(a), ember.tensor(a), alpha=ember.tensor(alpha))
    want = getattr(torch, fn)(torch.tensor(a), torch.tensor(a), alpha=torch.tensor(alpha))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = ember.tensor(a)
    getattr(x, fn + "_")(ember.tensor(a), alpha=ember.tensor(alpha))
    np.testing.assert_array_equal(x.numpy(), want.numpy())


def test_tensor_alpha_of_several_elements_is_a_type_error():
    x = ember.ones(3)
    with pytest.raises(TypeError, match="argument 'alpha' must be Number, not Tensor"):
        ember.add(x, x, alpha=ember.tensor([1.0, 2.0]))
    with pytest.raises(TypeError):
        torch.add(torch.ones(3), torch.ones(3), alpha=torch.tensor([1.0, 2.0]))
