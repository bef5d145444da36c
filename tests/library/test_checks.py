"""ember._check and its family against torch: the same exception types and messages."""
import warnings

import pytest
import torch

import ember

CHECKS = ["_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented"]


def _raised(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        try:
            fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return type(e), str(e)
    return None


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("message", [None, lambda: "size must be positive", lambda: 42])
def test_failing_check_raises_torchs_error(name, message):
    want = _raised(getattr(torch, name), False, message)
    got = _raised(getattr(ember, name), False, message)
    assert want is not None and got == want


@pytest.mark.parametrize("name", CHECKS)
def test_passing_check_returns_none(name):
    assert getattr(ember, name)(True) is None
    assert getattr(ember, name)(3 > 2, lambda: "unused") is None


@pytest.mark.parametrize("cond", [1, "yes", None])
def test_non_bool_condition_is_a_type_error(cond):
    assert _raised(ember._check, cond) == _raised(torch._check, cond)


def test_tensor_condition_points_to_check_tensor_all():
    assert _raised(ember._check, ember.tensor(True)) == _raised(torch._check, torch.tensor(True))
    assert _raised(ember._check_tensor_all, ember.tensor([True, False])) == \
        _raised(torch._check_tensor_all, torch.tensor([True, False]))
    assert ember._check_tensor_all(ember.tensor([True, True])) is None
    assert _raised(ember._check_tensor_all, ember.tensor([1, 0]))[0] is TypeError


def test_message_must_be_callable():
    assert _raised(ember._check, False, "text") == _raised(torch._check, False, "text")


def test_check_with_custom_error_type_and_warning_rejected():
    class MyError(Exception):
        pass
    assert _raised(ember._check_with, MyError, False, lambda: "m") == (MyError, "m")
    assert _raised(ember._check_with, UserWarning, False, None)[0] is AssertionError
    assert _raised(torch._check_with, UserWarning, False, None)[0] is AssertionError


def test_check_is_size_warns_and_checks_like_torch():
    with pytest.warns(FutureWarning) as want:
        torch._check_is_size(3)
    with pytest.warns(FutureWarning) as got:
        ember._check_is_size(3)
    assert str(got[0].message) == str(want[0].message)
    assert _raised(ember._check_is_size, -1) == _raised(torch._check_is_size, -1)
    assert _raised(ember._check_is_size, 5, max=4) == _raised(torch._check_is_size, 5, max=4)


def test_check_on_sizes_inside_compile():
    def f(x):
        ember._check(x.shape[0] >= 2, lambda: f"need 2 rows, got {x.shape[0]}")
        return x * 2
    cf = ember.compile(f, backend="eager")
    assert ember.equal(cf(ember.ones(3, 2)), ember.full((3, 2), 2.0))
    with pytest.raises(RuntimeError, match="need 2 rows, got 1"):
        cf(ember.ones(1, 2))
