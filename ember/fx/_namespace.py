"""The ``ember`` package itself, for fx's printed names and generated code (``ember.relu``,
``ember.nn.Linear(...)``), which refer to its public namespace.

fx is a layer below ``ember/__init__.py``, so it looks the package up instead of importing
it; the package has always finished loading by the time a graph is printed or run.
"""
import sys


def ember_namespace():
    return sys.modules[__name__.split(".", 1)[0]]
