"""``ember.export``: sound whole-graph capture into a serialisable program (torch.export).

``export(mod, args)`` runs ``mod`` once under ember.compile's capture in a strict,
whole-graph mode and gives an `ExportedProgram`: a functional graph of ember ops with the
parameters and buffers lifted to inputs, its signature, weights and the ranges of its
dynamic dimensions.  ``save``/``load`` write and read it as a documented, versioned zip
that never runs code on load (`ember.export.serde`); the lite runtime (``ember_lite``)
runs saved programs with NumPy alone.
"""

from .._dynamo.exc import UserError
from ..func._pytree import register_dataclass, tree_unflatten
from ..fx.experimental.symbolic_shapes import ConstraintViolationError
from ..nn.modules.module import Module
from .capture import capture
from .decompositions import (CustomDecompTable, default_decompositions,
                             primitive_decompositions)
from .dynamic_shapes import AdditionalInputs, Dim, ShapesCollection, dims
from .exported_program import ExportedProgram, ModuleCallEntry, ModuleCallSignature
from .graph_signature import (ExportBackwardSignature, ExportGraphSignature, InputKind,
                              InputSpec, OutputKind, OutputSpec)
from .guards import check_guards
from .draft_export import draft_export
from .unflatten import FlatArgsAdapter, UnflattenedModule, unflatten
from .verify import dims_that_do_not_generalise

__all__ = ["export", "ExportedProgram", "Dim", "dims", "ShapesCollection", "save", "load",
           "default_decompositions", "primitive_decompositions", "ExportGraphSignature",
           "InputKind", "InputSpec", "OutputKind", "OutputSpec", "ModuleCallEntry", "ModuleCallSignature", "UserError",
           "CustomDecompTable", "ExportBackwardSignature", "register_dataclass",
           "unflatten", "UnflattenedModule", "FlatArgsAdapter", "AdditionalInputs",
           "draft_export"]


class _FunctionModule(Module):
    """A function exported as a module (beyond torch, whose export takes modules only)."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def forward(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


def _program(mod, args, kwargs, dynamic_shapes, strict, training, log=True):
    auto_static, replacements = set(), {}

    def recapture(flat):
        a, k = tree_unflatten(flat, c.in_spec)
        return capture(mod, a, k, dynamic_shapes, strict, auto_static, replacements)

    for _ in range(8):
        c = capture(mod, args, kwargs, dynamic_shapes, strict, auto_static, replacements)
        try:
            ranges, more, tied, asserts = check_guards(c)
        except ConstraintViolationError as e:
            raise UserError(str(e))   # torch's chain: the violation, then the user error
        if more - auto_static or tied.keys() - replacements.keys():
            # Dim.AUTO dims the program specialised or tied to others: capture again so
            auto_static |= more
            for lf, expr in tied.items():
                replacements.setdefault(lf, expr)
            continue
        bad = dims_that_do_not_generalise(c, recapture)
        if not bad:
            break
        declared = [v for v in bad if not v.auto]
        if declared:
            try:
                raise ConstraintViolationError(
                    f"Constraints violated ({', '.join(v.name for v in declared)})! The "
                    f"program specializes them: captured again with another size it gives "
                    f"a different graph (for example a Python loop over the size, or a size "
                    f"made a plain int).\n" + "\n".join(
                        f"  - Suggested fix: {v.name} = {v.example}   (or Dim.STATIC for that "
                        f"dimension)" for v in declared))
            except ConstraintViolationError as e:
                raise UserError(str(e))
        for v in bad:
            auto_static.update(v.leaves)
    _insert_asserts(c, asserts)
    if log:
        _log_symbols(c, ranges)
    from .dynamic_shapes import _argument_names
    arg_names = _argument_names(mod, len(args), kwargs) + list(kwargs or {})
    calls = [ModuleCallEntry("", ModuleCallSignature([], [], c.in_spec, c.out_spec, arg_names))]
    # every submodule, called or not, in the module's order (unflatten's tree, as torch's)
    calls += [ModuleCallEntry(fqn) for fqn, _ in mod.named_modules() if fqn]
    return ExportedProgram(c.gm, c.gm.graph, c.signature, c.state_dict, ranges, calls,
                           example_inputs=(tuple(args), dict(kwargs or {})),
                           constants=c.constants, in_spec=c.in_spec, out_spec=c.out_spec,
                           training=training)


def _insert_asserts(c, asserts):
    """``assert_size`` nodes for what the program assumed of values read from its inputs,
    before its first operation."""
    from .._core.op import Op
    from .._dynamo.symbolic import render
    from .sizes import assert_size
    if not asserts:
        return
    graph = c.gm.graph
    first = next(n for n in graph.nodes if n.op == "output" or isinstance(n.target, Op))
    names = dict(c.symbols)
    names.update({("u", k, 0): f"u{k}" for k in c.unbacked})
    for (op, lhs, rhs, _), text in asserts:
        a, b = (render(e, c.leaf_values, names) for e in (lhs, rhs))
        a, b = (c.sizes.node(x, first) if type(x) is str else x for x in (a, b))
        with graph.inserting_before(first):
            graph.call_function(assert_size, (a, op, b, text))
    c.gm.recompile()


def _log_symbols(c, ranges):
    """``TORCH_LOGS=+dynamic`` / ``set_logs(dynamic=DEBUG)``: each symbol and what the
    program assumed of it, as torch's symbolic-shapes log reports them."""
    from .._dynamo import logs
    if not logs.enabled("dynamic"):
        return
    for lf, name in c.symbols.items():
        if lf[0] == "a" and name.isidentifier() and name in ranges and \
                lf not in c.replacements:
            path = f"{c.flat_paths[c.arg_of_leaf[lf[1]]]}.size()[{lf[2]}]"
            logs.log("dynamic", f"create_symbol {name} = {c.leaf_values[lf]} for {path} "
                                f"{ranges[name]}")
    for lf, expr in c.replacements.items():
        path = f"{c.flat_paths[c.arg_of_leaf[lf[1]]]}.size()[{lf[2]}]"
        logs.log("dynamic", f"set_replacement {path} = {c.symbols.get(lf, expr)}")


def export(mod, args, kwargs=None, *, dynamic_shapes=None, strict=False,
           preserve_module_call_signature=(), prefer_deferred_runtime_asserts_over_guards=False):
    """Capture ``mod(*args, **kwargs)`` as an `ExportedProgram` (torch.export.export).

    ``dynamic_shapes`` declares the dimensions that may vary (`Dim`, see
    `ember.export.dynamic_shapes`); every other dimension is static and checked when the
    program's module is called.  Both ``strict`` modes (False by default, as in torch 2.13)
    run the Python once and reject a branch on a tensor's value, with a message naming the
    line and suggesting `ember.cond`.  Beyond torch: ``mod`` may be a
    plain function, and the program keeps both training modes (see `ExportedProgram`)."""
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got "
                         f"{type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"Expecting `kwargs` to be a dict, got {type(kwargs).__name__}")
    if not isinstance(mod, Module):
        if not callable(mod):
            raise ValueError(f"Expected `mod` to be an instance of `ember.nn.Module` or a "
                             f"callable, got {type(mod).__name__}")
        mod = _FunctionModule(mod)
    training = mod.training
    if isinstance(dynamic_shapes, ShapesCollection):
        # keyed by the caller's tensors: resolved before capture copies them
        dynamic_shapes = dynamic_shapes.dynamic_shapes(mod, args, kwargs)
    additional = dynamic_shapes if isinstance(dynamic_shapes, AdditionalInputs) else None
    if additional is not None:
        dynamic_shapes = additional.dynamic_shapes(mod, args, kwargs)
    ep = _program(mod, args, kwargs, dynamic_shapes, strict, training)
    if additional is not None:
        additional.verify(ep)
    if isinstance(mod, _FunctionModule):
        return ep   # a function has no training mode to read
    # the program of the other mode, kept when it differs (ExportedProgram.module())
    try:
        mod.train(not training)
        other = _program(mod, args, kwargs, dynamic_shapes, strict, not training, log=False)
    except Exception as e:
        other = None
        ep.alternate_error = f"{type(e).__name__}: {e}"
    finally:
        mod.train(training)
    if other is not None and other.graph_module.code != ep.graph_module.code:
        ep.alternate = other
    return ep


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=2):
    """Write ``ep`` to ``f`` (a path or a binary file) in ember's program format
    (`ember.export.serde`; torch.export.save)."""
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"The 'ep' parameter must be an instance of 'ExportedProgram', got "
                        f"'{type(ep).__name__}' instead.")
    from .serde import save_program
    save_program(ep, f, extra_files=extra_files, opset_version=opset_version)


def load(f, *, extra_files=None, expected_opset_version=None):
    """Read a program written by `save` (torch.export.load); runs no code from the file."""
    from .serde import load_program
    return load_program(f, extra_files=extra_files, expected_opset_version=expected_opset_version)



