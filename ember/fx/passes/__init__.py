"""Graph passes: shape propagation, module splitting, Graphviz drawing."""
from . import graph_drawer, shape_prop, split_module  # noqa: F401

__all__ = ["graph_drawer", "shape_prop", "split_module"]
