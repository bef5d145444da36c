"""Experimental fx utilities (``optimization.fuse``)."""
from . import optimization  # noqa: F401
from . import symbolic_shapes  # noqa: F401
