"""Errors of symbolic shape reasoning (torch.fx.experimental.symbolic_shapes)."""

__all__ = ["ConstraintViolationError", "GuardOnDataDependentSymNode"]


class ConstraintViolationError(RuntimeError):
    """A dimension declared dynamic is constrained by the program (specialised, narrowed or
    tied to another): the message lists each violation with a suggested fix."""


class GuardOnDataDependentSymNode(RuntimeError):
    """The program branches on a value that depends on tensor data."""
