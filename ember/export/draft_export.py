"""``ember.export.draft_export``: export that reports what is unsound instead of failing.

Where `export` raises because the program specialises a dimension declared dynamic (or an
example size is outside its declared range), ``draft_export`` records the problem as a
``GUARD_ADDED`` failure in a `DraftExportReport` (``ep._report``, as torch keeps it) and
exports again with each declared dimension made ``Dim.AUTO``: dynamic where the program
allows it, static where it does not.  The report says which dims ended up static.
Unlike torch, a branch on a tensor's value still raises: ember's capture cannot yet
specialise a data-dependent branch to the example's value and keep one graph, so the
``DATA_DEPENDENT_ERROR`` failure is raised with the report text rather than recorded.
"""
import enum

from .._dynamo.exc import UserError
from .dynamic_shapes import (AdditionalInputs, DerivedDim, Dim, ShapesCollection,
                             _RangedHint)

__all__ = ["draft_export", "DraftExportReport", "FailureReport", "FailureType"]


class FailureType(enum.IntEnum):
    MISSING_FAKE_KERNEL = 1
    DATA_DEPENDENT_ERROR = 2
    GUARD_ADDED = 3
    MISMATCHED_FAKE_KERNEL = 4

    def __str__(self):
        return self.name


class FailureReport:
    def __init__(self, failure_type, data, xfail=False):
        self.failure_type, self.data, self.xfail = failure_type, data, xfail

    def __repr__(self):
        return (f"FailureReport(failure_type={self.failure_type}, xfail={self.xfail}, "
                f"data={self.data})")

    def print(self, str_to_filename=None):
        if self.failure_type is FailureType.GUARD_ADDED:
            return (f"Guard Added.\n    A guard was added during tracing, which might've "
                    f"resulted in some incorrect tracing or constraint violation error.\n"
                    f"    Specifically: {self.data['expr']}\n\n    Because of this, the "
                    f"declared dims were exported as Dim.AUTO; the program keeps "
                    f"{self.data['static']} static.\n")
        if self.failure_type is FailureType.DATA_DEPENDENT_ERROR:
            return (f"Data dependent error.\n    {self.data['expr']}\n    Please use "
                    f"ember.cond, or make the condition depend on shapes only.\n")
        return f"{self.failure_type.name}: {self.data}\n"


class DraftExportReport:
    """What `draft_export` found (torch.export's DraftExportReport)."""

    def __init__(self, failures, str_to_filename=None, expressions_created=None,
                 op_profiles=None):
        self.failures = failures
        self.str_to_filename = str_to_filename or {}
        self.expressions_created = expressions_created or {}
        self.op_profiles = op_profiles or {}

    def successful(self):
        return all(f.xfail for f in self.failures)

    def __repr__(self):
        return f"DraftExportReport({self.failures})"

    def __str__(self):
        if self.successful():
            return ("Congratulations: No issues are found during export, and it was able to "
                    "soundly produce a graph.\nYou can now change back to "
                    "ember.export.export()\n")
        return (f"WARNING: {len(self.failures)} issue(s) found during export, and it was not "
                f"able to soundly produce a graph.\nPlease follow the instructions to fix "
                f"the errors.\n\n" + "".join(f"{i + 1}. {f.print(self.str_to_filename)}\n"
                                            for i, f in enumerate(self.failures)))

    def apply_suggested_fixes(self):
        raise NotImplementedError("Not implemented yet")   # torch 2.13's own answer


def _relaxed(spec):
    """``spec`` with every declared dimension (a Dim, derived dim or DYNAMIC hint) made
    ``Dim.AUTO``."""
    if isinstance(spec, dict):
        return {k: _relaxed(v) for k, v in spec.items()}
    if isinstance(spec, (tuple, list)):
        return type(spec)(_relaxed(v) for v in spec)
    if isinstance(spec, (Dim, DerivedDim)) or spec is Dim.DYNAMIC or \
            isinstance(spec, _RangedHint) and spec.hint is not Dim.STATIC:
        return Dim.AUTO
    return spec


def draft_export(mod, args, kwargs=None, *, dynamic_shapes=None,
                 preserve_module_call_signature=(), strict=False,
                 prefer_deferred_runtime_asserts_over_guards=False):
    """`export`, recording the dims it had to specialise in ``ep._report`` instead of
    raising (torch.export.draft_export; see the module docstring)."""
    from . import export
    failures = []
    try:
        ep = export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict)
    except UserError as e:
        text = str(e)
        if not text.startswith(("Constraints violated", "Received user-specified dim hint")):
            report = DraftExportReport([FailureReport(FailureType.DATA_DEPENDENT_ERROR,
                                                      {"expr": text})])
            raise UserError(f"{text}\n\ndraft_export report:\n{report}") from None
        if isinstance(dynamic_shapes, (ShapesCollection, AdditionalInputs)):
            from . import _FunctionModule
            from ..nn.modules.module import Module
            m = mod if isinstance(mod, Module) else _FunctionModule(mod)
            dynamic_shapes = dynamic_shapes.dynamic_shapes(m, args, kwargs)
        ep = export(mod, args, kwargs, dynamic_shapes=_relaxed(dynamic_shapes), strict=strict)
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        user = {s.arg.name for s in ep.graph_signature.input_specs
                if s.kind.name == "USER_INPUT"}
        static = [f"{n.name}.shape[{d}]" for n in placeholders if n.name in user
                  for d, s in enumerate(getattr(n.meta.get("val"), "shape", ()))
                  if type(s) is int]
        failures.append(FailureReport(FailureType.GUARD_ADDED,
                                      {"expr": text, "static": static}))
    ep._report = DraftExportReport(failures)
    return ep
