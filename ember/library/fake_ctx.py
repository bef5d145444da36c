"""`get_ctx`: the context a fake implementation (``register_fake``) runs in."""
import contextlib
import threading

from .._core.meta import DataDependentShape

__all__ = ["get_ctx", "FakeImplCtx", "active"]

_LOCAL = threading.local()


class FakeImplCtx:
    """What a fake implementation may ask for besides its inputs' shapes."""

    def new_dynamic_size(self, *, min=0, max=None):
        """A size that depends on the input data (e.g. the count of nonzeros): ember records
        the op's output shape as data-dependent, so a capture ends its graph there (or, in
        export, reports the op) instead of assuming a size."""
        raise DataDependentShape(f"a custom op's fake implementation asked for a "
                                 f"data-dependent size (min={min}, max={max})")



@contextlib.contextmanager
def active():
    prev = getattr(_LOCAL, "ctx", None)
    _LOCAL.ctx = FakeImplCtx()
    try:
        yield _LOCAL.ctx
    finally:
        _LOCAL.ctx = prev


def get_ctx():
    """get_ctx() returns the current FakeImplCtx object; valid only inside a fake
    implementation (``register_fake``) while ember computes the op's output shape."""
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        raise RuntimeError("ember.library.get_ctx() called outside of a fake implementation "
                           "(register_fake) being run to compute an operator's output shape")
    return ctx
