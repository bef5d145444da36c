"""Experimental fx utilities (``optimization.fuse``)."""
from . import optimization  # noqa: F401
