"""``ember.testing``: `assert_close` and `make_tensor`, as ``torch.testing`` has them."""
from ._comparison import assert_close  # noqa: F401
from ._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "make_tensor", "assert_allclose"]


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated alias of `assert_close` (torch's ``assert_allclose``): non-tensor inputs
    are converted to tensors, dtypes need not match, and the tolerances default to
    ``assert_close``'s for the dtypes."""
    import warnings
    from .. import ops
    from .._core.tensor import Tensor
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = ops.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = ops.tensor(expected, dtype=actual.dtype)
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False,
                 msg=msg or None)
