"""Exceptions of ember.compile, with torch's names."""

__all__ = ["Unsupported", "InvalidBackend", "BackendCompilerFailed", "RecompileLimitExceeded",
           "UserError"]


class Unsupported(RuntimeError):
    """A graph break under ``fullgraph=True``: the message gives the reason and the user's
    file:line."""


class InvalidBackend(RuntimeError):
    pass


class BackendCompilerFailed(RuntimeError):
    """The backend raised while compiling a graph."""

    def __init__(self, backend_name, inner):
        super().__init__(f"backend={backend_name!r} raised:\n{type(inner).__name__}: {inner}")
        self.backend_name = backend_name
        self.inner_exception = inner


class RecompileLimitExceeded(RuntimeError):
    pass


class UserError(RuntimeError):
    """A program ember.export cannot capture as written (data-dependent control flow, a
    dynamic dimension the program specializes, ...): the message says why, where, and
    how to fix it."""
