"""ember.jit: the TorchScript API (``torch.jit``) on ember's program format.

``trace`` records the ops a function runs on example inputs (`ember.jit._trace`);
``script`` checks a function or module against the TorchScript subset and keeps its eager
meaning while making its data-dependent ``if``/``while`` capturable (`ember.jit._script`
describes the design, which differs from torch's IR interpreter).  Both give objects with
``graph``, ``code`` and ``save``; ``load`` runs a saved program without the Python class,
and ``ember.jit.mobile`` runs the lite-interpreter files through ``ember_lite``.
"""
from ._annotations import Attribute, Final, annotate, export, ignore, unused
from ._script import script
from ._script_module import (RecursiveScriptModule, ScriptFunction, ScriptModule,
                             TopLevelTracedModule, TracedModule)
from ._state import is_scripting, is_tracing
from ._trace import TracerWarning, TracingCheckError, trace, trace_module
from . import frontend

__all__ = ["Attribute", "trace", "trace_module", "script", "ScriptModule", "ScriptFunction",
           "RecursiveScriptModule", "TracedModule", "TopLevelTracedModule", "TracerWarning",
           "TracingCheckError", "is_scripting", "is_tracing", "annotate", "Final", "export",
           "ignore", "unused", "frontend"]
from ._serialization import load, save
__all__ += ["save", "load"]
from . import mobile
from ._freeze import freeze, optimize_for_inference, run_frozen_optimizations
__all__ += ["freeze", "optimize_for_inference", "run_frozen_optimizations"]
from ._builtins import (Error, Future, ScriptWarning, export_opnames, fork, isinstance,
                        optimized_execution, script_if_tracing, set_fusion_strategy, wait)
__all__ += ["Error", "Future", "ScriptWarning", "export_opnames", "fork", "isinstance",
            "optimized_execution", "script_if_tracing", "set_fusion_strategy", "wait"]


def _overload(func):
    """Declares one TorchScript overload of a function (``torch.jit._overload``; its body is
    ``pass``/``...``): eager Python keeps the undecorated definition that follows, so the
    declaration is returned as is."""
    return func


_overload_method = _overload  # the same for a method's overloads
