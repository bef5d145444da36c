"""The helper names of torch.nn.functional's namespace, vs torch."""
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_helpers(lib):
    F = lib.nn.functional
    assert F.Tensor is lib.Tensor and F.BroadcastingList2[int] is None
    assert F.has_torch_function is lib.overrides.has_torch_function or \
        F.has_torch_function((lib.ones(1),)) is False
    assert not F.has_torch_function_unary(lib.ones(1))
    assert not F.has_torch_function_variadic(lib.ones(1), 2)
    F.assert_int_or_pair(3, "k", "{} bad")
    F.assert_int_or_pair((1, 2), "k", "{} bad")
    with pytest.raises(AssertionError, match="k bad"):
        F.assert_int_or_pair((1, 2, 3), "k", "{} bad")


@LIBS
def test_boolean_dispatch(lib):
    F = lib.nn.functional

    def with_idx(x, flag=False):
        """Doc."""
        return "true"

    def without(x, flag=False):
        return "false"
    fn = F.boolean_dispatch("flag", 1, False, with_idx, without, "mymod", "myfn")
    assert fn(1) == "false" and fn(1, True) == "true" and fn(1, flag=True) == "true"
    assert fn.__name__ == "myfn" and fn.__module__ == "mymod" and fn.__doc__ == "Doc."
    assert without.__doc__ == "Doc."

    def a():
        """A."""

    def b():
        """B."""
    with pytest.raises(RuntimeError, match="only one function can have a docstring"):
        F.boolean_dispatch("f", 0, False, a, b, None, None)
