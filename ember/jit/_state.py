"""Whether a TorchScript frontend is running: ``is_scripting`` and ``is_tracing``.

``is_tracing()`` is True while ``jit.trace`` records the traced function (the code runs for
real then, as in torch).  ``is_scripting()`` is True while the program of a scripted
function is captured (see ``ember.jit._script``); when a scripted function simply runs,
it runs as Python and ``is_scripting()`` is False, as it is for torch's eager code.
Thread-local, as ember's grad mode and mode stack are.
"""
import threading

__all__ = ["is_scripting", "is_tracing", "tracing", "scripting"]

_LOCAL = threading.local()


def is_tracing():
    """Whether ``jit.trace`` is recording the code that calls this."""
    return getattr(_LOCAL, "tracing", 0) > 0


def is_scripting():
    """Whether the code that calls this is being compiled by ``jit.script`` (True while a
    scripted function's program is captured)::

        @ember.jit.unused
        def unsupported_linear_op(x):
            return x

        def linear(x):
            if ember.jit.is_scripting():
                return ember.linear(x)
            else:
                return unsupported_linear_op(x)
    """
    return getattr(_LOCAL, "scripting", 0) > 0


class _Flag:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        setattr(_LOCAL, self.name, getattr(_LOCAL, self.name, 0) + 1)

    def __exit__(self, *exc):
        setattr(_LOCAL, self.name, getattr(_LOCAL, self.name) - 1)


def tracing():
    return _Flag("tracing")


class recording:
    """``jit.trace``'s recorder is the current one in this thread while active."""

    def __init__(self, recorder):
        self.recorder = recorder

    def __enter__(self):
        self.prev = getattr(_LOCAL, "recorder", None)
        _LOCAL.recorder = self.recorder

    def __exit__(self, *exc):
        _LOCAL.recorder = self.prev


def current_recorder():
    """The innermost recorder taking ops now (a branch's, while one is recorded), or None."""
    rec = getattr(_LOCAL, "recorder", None)
    while rec is not None and getattr(rec, "sub", None) is not None and \
            hasattr(rec.sub, "records"):
        rec = rec.sub
    return rec


def scripting():
    return _Flag("scripting")
