"""``ember.distributed.rpc.functions``: decorators for functions run through RPC."""
import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """A decorator for a function whose execution returns a Future: the callee replies
    with the Future's value once it completes, instead of with the Future itself, so the
    serving thread is free while the result is pending."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper._ember_async_execution = True
    return wrapper
