"""Graph passes: shape propagation, module splitting, Graphviz drawing."""
from . import graph_drawer, shape_prop, split_module  # noqa: F401
from .split_module import split_module as split_module_fn  # noqa: F401

__all__ = ["graph_drawer", "shape_prop", "split_module"]
