"""A tensor-like that is not a Tensor and defines only ``__torch_function__`` (torch's
"Extending torch" ScalarTensor) reaches its override from the operators, against torch."""
import numpy as np
import pytest
import torch

import ember


def _scalar_tensor_cls(lib):
    class ScalarTensor:
        """An N x N diagonal matrix of one value, as torch's docs' example."""

        def __init__(self, n, value):
            self._n, self._value = n, value

        def tensor(self):
            return self._value * lib.eye(self._n)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            args = [a.tensor() if isinstance(a, cls) else a for a in args]
            return func(*args, **(kwargs or {}))
    return ScalarTensor


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_operators_route_a_torch_function_tensor_like(lib):
    a = _scalar_tensor_cls(lib)(3, 2.0)
    np.testing.assert_allclose(lib.exp(a).numpy(), np.exp(2.0 * np.eye(3)), rtol=1e-6)
    np.testing.assert_allclose(lib.add(a, 1).numpy(), 2.0 * np.eye(3) + 1)
    np.testing.assert_allclose(lib.add(lib.ones(3, 3), a).numpy(), 2.0 * np.eye(3) + 1)
    np.testing.assert_allclose(lib.relu(a).numpy(), 2.0 * np.eye(3))


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_other_objects_are_still_refused(lib):
    class Plain:
        pass
    with pytest.raises(TypeError):
        lib.exp(Plain())
