"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each works as a context manager and as a decorator, like PyTorch's.
"""
import functools
import inspect

from .._core.state import STATE

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "set_multithreading_enabled"]


def is_grad_enabled():
    """True if grad mode is currently enabled."""
    return STATE.grad_enabled


def is_inference_mode_enabled():
    return STATE.inference


class _DecoratorContextManager:
    def __call__(self, fn):
        if inspect.isclass(fn):
            raise TypeError("grad mode decorators cannot decorate classes")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen(*args, **kwargs):
                g = fn(*args, **kwargs)
                with self.clone():
                    resp = g.send(None)
                while True:
                    try:
                        with self.clone():
                            resp = g.send((yield resp))
                    except StopIteration as e:
                        return e.value
            return gen

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Context manager / decorator that disables gradient calculation."""

    def __init__(self, orig_func=None):
        self._fn = orig_func

    def __new__(cls, orig_func=None):
        if orig_func is None or cls is not no_grad:
            return super().__new__(cls)
        return cls()(orig_func)

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = False

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Context manager / decorator that enables gradient calculation."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)

    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Sets gradient calculation on or off; takes effect immediately, and as a context
    manager or decorator restores the previous mode afterwards."""

    def __init__(self, mode):
        self.prev = STATE.grad_enabled
        self.mode = bool(mode)
        STATE.grad_enabled = self.mode

    def __enter__(self):
        STATE.grad_enabled = self.mode

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors created inside are inference tensors (no version tracking)."""

    def __init__(self, mode=True):
        self.mode = mode

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __enter__(self):
        self.prev = (STATE.grad_enabled, STATE.inference)
        if self.mode:
            STATE.grad_enabled = False
            STATE.inference = True

    def __exit__(self, *exc):
        STATE.grad_enabled, STATE.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)


_multithreading = [True]


class set_multithreading_enabled(_DecoratorContextManager):
    """Sets whether backward may run on per-device worker threads; takes effect immediately
    and is restored on exit.

    ember's engine runs backward on the calling thread for every device (as torch does for
    CPU), so the setting is recorded for code that reads it and changes no result."""

    def __init__(self, mode):
        self.prev = _multithreading[0]
        self.mode = bool(mode)
        _multithreading[0] = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _multithreading[0] = self.prev

    def clone(self):
        return self.__class__(self.mode)


def _is_multithreading_enabled():
    return _multithreading[0]
