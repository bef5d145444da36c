"""`ember.onnx.export`: a model or ExportedProgram -> an ONNX model."""
import enum
import os
import re
import time
import warnings

from ._capture import from_exported_program
from ._exportable import ExportableModule
from .errors import OnnxExporterError, OnnxExporterWarning

__all__ = ["export", "TrainingMode", "OperatorExportTypes", "is_in_onnx_export"]


class TrainingMode(enum.Enum):
    """The legacy ``training`` argument of `export` (deprecated, as in torch): export the
    model in the training mode it is in."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2

    def __str__(self):
        return f"TrainingMode.{self.name}"


class OperatorExportTypes(enum.Enum):
    """The legacy ``operator_export_type`` argument of `export`: only ONNX is supported."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3

    def __str__(self):
        return f"OperatorExportTypes.{self.name}"


_IN_EXPORT = [False]


def is_in_onnx_export():
    """Whether an `ember.onnx.export` call is running (tracing the model)."""
    return _IN_EXPORT[0]


def _is_exported_program(model):
    return type(model).__name__ == "ExportedProgram" and hasattr(model, "graph_signature")


def _axes_spec(name, spec):
    """{dim: dim name} of one ``dynamic_axes`` entry (a dict, or a list of dims)."""
    if isinstance(spec, dict):
        return {int(d): str(n) for d, n in spec.items()}
    if isinstance(spec, (list, tuple)):
        return {int(d): f"{name}_dynamic_axes_{i + 1}" for i, d in enumerate(spec)}
    raise TypeError(f"dynamic_axes[{name!r}] must be a dict {{axis: name}} or a list of axes, "
                    f"got {type(spec).__name__}")


def _dims_of_dynamic_shapes(dynamic_shapes, n_inputs, names):
    """{flat input index: {dim: name}} from a ``dynamic_shapes`` of the torch.export forms."""
    out = {}
    if dynamic_shapes is None:
        return out
    entries = list(dynamic_shapes.values()) if isinstance(dynamic_shapes, dict) else \
        list(dynamic_shapes)
    for i, spec in enumerate(entries[:n_inputs]):
        if spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec) \
            if isinstance(spec, (list, tuple)) else ()
        # Dim.STATIC is static; Dim.AUTO may stay static, so it is not required dynamic
        named = {int(d): _dim_name(v, names[i], d) for d, v in items
                 if v is not None and getattr(v, "name", None) not in ("STATIC", "AUTO")}
        if named:
            out[i] = named
    return out


def _dim_name(v, input_name, d):
    if isinstance(v, str):
        return v
    name = getattr(v, "__name__", None)
    return name if isinstance(name, str) else f"{input_name}_dim_{d}"


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None,
           output_names=None, opset_version=None, dynamo=True, external_data=True,
           dynamic_shapes=None, custom_translation_table=None, report=False, optimize=True,
           verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=TrainingMode.EVAL, operator_export_type=OperatorExportTypes.ONNX,
           do_constant_folding=True, custom_opsets=None, export_modules_as_functions=False,
           autograd_inlining=True):
    """Exports a model into ONNX format.

    ``model`` is an ``nn.Module``, a function, or an `ember.export.ExportedProgram` (used
    as is).  A module or function is captured whole with ``args``/``kwargs`` as example
    inputs: tensor arguments become the graph inputs (in the order they occur), anything else
    is baked in.  Parameters, buffers and constant tensors become ONNX initializers.  Each
    ember operator of the graph is lowered to ONNX operators; an operator with no lowering is
    first decomposed into ember's primitives, and one that has neither fails with
    `UnsupportedOperatorError` naming it.

    Args:
        f: where to save the model: a path or a binary file object (None: not saved; use the
            returned program's ``save``).
        input_names, output_names: the graph's input/output names, in order (default: the
            argument names of ``forward``, and ``output``/``output_0, output_1, ...``).
        opset_version: the ai.onnx opset (default 18).  Below 18 (the lowest ember writes)
            the model is converted down with ``onnx.version_converter`` where it can be, and
            kept at 18 otherwise, with a warning either way (as torch does).
        dynamic_axes: ``{name: {axis: axis name}}`` or ``{name: [axes]}`` for inputs and
            outputs: those dims are exported as symbolic (``dim_param``), and the sizes the
            model computes from them are computed in the ONNX graph.
        dynamic_shapes: the torch.export form (a dict by argument name or a tuple, of
            ``{dim: Dim}``); used like ``dynamic_axes``.
        external_data: with ``f`` a path, store the weights in ``<f>.data`` next to the model
            (False: in the model file).
        export_params: with ``f``, False leaves the weights out of the file (they become
            graph inputs).
        keep_initializers_as_inputs: with ``f``, list the weights among the graph inputs too.
        custom_translation_table: ``{op or op name: fn}`` lowerings that take precedence, with
            ember's lowering convention ``fn(builder, ctx, *args, **params)`` (see
            ``ember.onnx._registry``).
        verify: run the model with ONNX Runtime on the example inputs and check the outputs
            equal the model's (rtol 1e-4, atol 1e-5).
        verbose: print the ONNX graph.  report / dump_exported_program: write a Markdown
            report / the captured graph's code to ``artifacts_dir``.  profile: print how
            long each phase took.  optimize: drop nodes whose results are unused.
        do_constant_folding: compute what depends only on weights at export time, as
            initializers (BatchNorm's scale and shift, transposed weights).
        dynamo: False only changes the return value (torch's legacy exporter returns None);
            ember has one exporter.
        training, custom_opsets, export_modules_as_functions, autograd_inlining: deprecated
            in torch and ignored (the model is exported in the training mode it is in).
        operator_export_type: must be ``OperatorExportTypes.ONNX``.

    Returns:
        an `ONNXProgram` (``model_proto``, ``save``, callable with ONNX Runtime); None with
        ``dynamo=False``, as torch's legacy exporter returns (the model is then only saved
        to ``f``).
    """
    from ._convert import DEFAULT_OPSET, MIN_OPSET, GraphInput, GraphOutput, convert
    from ._deps import require_onnx
    from ._program import ONNXProgram
    from ._registry import LOWERINGS
    onnx = require_onnx()
    if isinstance(model, ExportableModule):
        if not args and kwargs is None:
            args, kwargs = model.example_arguments()
        input_names = model.input_names() if input_names is None else input_names
        output_names = model.output_names() if output_names is None else output_names
        if dynamic_shapes is None and dynamic_axes is None:
            dynamic_shapes = model.dynamic_shapes()
    if operator_export_type != OperatorExportTypes.ONNX:
        raise ValueError(f"ember.onnx.export: operator_export_type={operator_export_type} is "
                         f"not supported; only OperatorExportTypes.ONNX is")
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    max_opset = onnx.defs.onnx_opset_version()
    if not 7 <= opset <= max_opset:
        raise ValueError(f"ember.onnx.export: opset_version={opset_version} is not supported; "
                         f"use {MIN_OPSET} to {max_opset} (lower ones down to 7 by conversion)")
    target_opset = opset
    if opset < MIN_OPSET:  # as torch: export at the lowest opset written, then convert down
        warnings.warn(f"ember.onnx.export: opset_version={opset} is below {MIN_OPSET}, the "
                      f"lowest ember writes: the model is exported at {MIN_OPSET} and converted "
                      f"with onnx.version_converter; if that fails it stays at {MIN_OPSET}",
                      OnnxExporterWarning, stacklevel=2)
        opset = MIN_OPSET
    if args is None:
        args = ()
    if not isinstance(args, tuple):
        args = (args,)
    times = {}
    t0 = time.perf_counter()
    _IN_EXPORT[0] = True
    try:
        captured, dim_names = _capture(model, args, kwargs, input_names, dynamic_axes,
                                       dynamic_shapes)
    finally:
        _IN_EXPORT[0] = False
    times["capture"] = time.perf_counter() - t0
    n_out = len(captured.user_outputs)
    out_names = list(output_names or [])
    if len(out_names) > n_out:
        raise ValueError(f"ember.onnx.export: {len(out_names)} output_names for {n_out} outputs")
    default_out = ["output"] if n_out == 1 else [f"output_{i}" for i in range(n_out)]
    out_names += default_out[len(out_names):]
    in_names = _input_names(captured, input_names)
    for key in (dynamic_axes or {}):
        if key not in in_names and key not in out_names:
            raise ValueError(f"ember.onnx.export: dynamic_axes names {key!r}, which is neither "
                             f"an input name {in_names} nor an output name {out_names}")
    inputs = [GraphInput(node, name, None, dim_names.get(i, {}))
              for i, (node, name) in enumerate(zip(captured.user_inputs, in_names))]
    inputs += [GraphInput(node, name, arr) for node, name, arr in captured.weights]
    outputs = [GraphOutput(idx, name, _axes_spec(name, (dynamic_axes or {})[name])
                           if name in (dynamic_axes or {}) else None)
               for idx, name in zip(captured.user_outputs, out_names)]
    saved = dict(LOWERINGS)
    try:
        for key, fn in (custom_translation_table or {}).items():
            LOWERINGS[key if isinstance(key, str) else key.name] = fn
        t0 = time.perf_counter()
        model_proto = convert(captured.graph, inputs, outputs, opset=opset,
                              fold=bool(do_constant_folding))
    finally:
        LOWERINGS.clear()
        LOWERINGS.update(saved)
    if optimize:
        remove_unused(model_proto)
    if target_opset != opset:
        model_proto = _convert_down(onnx, model_proto, target_opset)
    times["lowering"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        onnx.checker.check_model(model_proto)
    except onnx.checker.ValidationError as e:
        raise OnnxExporterError(f"ember.onnx.export: the ONNX model does not pass "
                                f"onnx.checker: {e}") from e
    times["check"] = time.perf_counter() - t0
    program = ONNXProgram(model_proto, captured.exported_program)
    if verify:
        _verify(program, model, args, kwargs, captured)
    if verbose:
        print(onnx.printer.to_text(model_proto.graph))
    if report or dump_exported_program:
        _write_artifacts(artifacts_dir, model_proto, captured, report, dump_exported_program)
    if profile:
        print("ember.onnx.export: " + ", ".join(f"{k} {v * 1e3:.1f} ms"
                                                for k, v in times.items()))
    if f is not None:
        program.save(f, include_initializers=export_params,
                     keep_initializers_as_inputs=keep_initializers_as_inputs,
                     external_data=bool(external_data) if not hasattr(f, "write") else False)
    return program if dynamo else None  # torch's legacy exporter (dynamo=False) returns None


def _capture(model, args, kwargs, input_names, dynamic_axes, dynamic_shapes):
    """(Captured, {user input index: {dim: dim name}})."""
    from ..export import export as ember_export
    from ._capture import flatten_inputs
    if _is_exported_program(model):
        captured = from_exported_program(model)
        names = captured.input_names
        named = {}
    else:
        flat = flatten_inputs(model, args, kwargs)
        names = [n for n, _ in flat]
        given = list(input_names or [])
        by_input = {}
        for i, name in enumerate(given[:len(flat)] + names[len(given):]):
            if name in (dynamic_axes or {}):
                by_input[i] = _axes_spec(name, dynamic_axes[name])
        if dynamic_shapes is not None and by_input:
            raise ValueError("ember.onnx.export: give dynamic_shapes or dynamic_axes, not both")
        named = _dims_of_dynamic_shapes(dynamic_shapes, len(flat), names)
        if dynamic_shapes is None and by_input:
            dynamic_shapes = _dynamic_shapes_of_axes(by_input, args, kwargs, flat)
        dynamic_shapes = _named_dims(dynamic_shapes, {})
        captured = from_exported_program(ember_export(model, tuple(args), kwargs,
                                                      dynamic_shapes=dynamic_shapes))
        if len(captured.user_inputs) == len(flat):
            captured.input_names = names
    names = list(input_names or []) + captured.input_names[len(input_names or []):]
    dims = {i: dict(d) for i, d in named.items()}
    for i, name in enumerate(names):
        if name in (dynamic_axes or {}):
            dims.setdefault(i, {}).update(_axes_spec(name, dynamic_axes[name]))
    _check_dynamic(captured, dims, names)
    return captured, dims


def _named_dims(spec, dims):
    """``dynamic_shapes`` with each dim given by a string name made a `Dim` of that name
    (as torch.onnx accepts); dims sharing a name share the Dim."""
    from ..export import Dim
    if isinstance(spec, str):
        return dims.setdefault(spec, Dim(spec))
    if isinstance(spec, dict):
        return {k: _named_dims(v, dims) for k, v in spec.items()}
    if isinstance(spec, (list, tuple)):
        return type(spec)(_named_dims(v, dims) for v in spec)
    return spec


def _dynamic_shapes_of_axes(by_input, args, kwargs, flat):
    """The torch.export ``dynamic_shapes`` (tuple form, one entry per positional argument)
    that makes the dims of ``dynamic_axes`` dynamic (``by_input``: flat tensor index ->
    {dim: name}); dims sharing a name share a `Dim`."""
    from .._core.tensor import Tensor
    from ..export import Dim
    from ._capture import flatten_inputs
    dims, specs, i = {}, [], 0
    for a in args:
        n = len(flatten_inputs(None, (a,), None))
        if isinstance(a, Tensor) and i in by_input:
            specs.append({d: dims.setdefault(name, Dim(_identifier(name)))
                          for d, name in by_input[i].items()})
        else:
            if any(j in by_input for j in range(i, i + n)):
                raise OnnxExporterError("ember.onnx.export: dynamic_axes applies to tensors "
                                        "passed as positional arguments, not to tensors nested "
                                        "in tuples/dicts; use dynamic_shapes")
            specs.append(None)
        i += n
    if any(j >= i for j in by_input):
        raise OnnxExporterError("ember.onnx.export: dynamic_axes applies to tensors passed as "
                                "positional arguments, not by keyword; use dynamic_shapes")
    return tuple(specs)


def _identifier(name):
    """A `Dim` name for an axis name (Dims need identifiers; the ONNX dim keeps the name)."""
    ident = re.sub(r"\W", "_", name)
    return ident if ident.isidentifier() else "d_" + ident


def _check_dynamic(captured, dims, names):
    from .._inductor import sizes as _sizes
    for i, d in dims.items():
        if i >= len(captured.user_inputs):
            continue
        node = captured.user_inputs[i]
        if not node.users:
            continue  # an input the program never reads: its sizes do not matter
        shape = node.meta["val"].shape
        for axis in d:
            if axis >= len(shape) or axis < -len(shape):
                raise ValueError(f"ember.onnx.export: dynamic_axes: input {names[i]!r} has "
                                 f"{len(shape)} dims, no axis {axis}")
            if isinstance(_sizes.size(shape[axis]), int):
                raise OnnxExporterError(
                    f"ember.onnx.export: dynamic_axes: dim {axis} of input {names[i]!r} was "
                    f"specialised to the constant {int(shape[axis])} while capturing (sizes 0 and "
                    f"1 always are, and code that branches on the size specialises it); use an "
                    f"example input with a size of 2 or more in that dim")


def _input_names(captured, input_names):
    names = list(input_names or [])
    n = len(captured.user_inputs)
    if len(names) > n:
        raise ValueError(f"ember.onnx.export: {len(names)} input_names for {n} tensor inputs")
    return names + captured.input_names[len(names):n]


def _convert_down(onnx, model, target):
    """``model`` converted to opset ``target``, or unchanged where the converter cannot."""
    from onnx import version_converter
    try:
        converted = version_converter.convert_version(model, target)
        onnx.checker.check_model(converted)
    except Exception as e:  # noqa: BLE001 - the converter raises RuntimeError/ValidationError
        warnings.warn(f"ember.onnx.export: converting the model to opset {target} failed "
                      f"({str(e).splitlines()[0][:200]}); it is kept at opset "
                      f"{model.opset_import[0].version}", OnnxExporterWarning, stacklevel=3)
        return model
    return converted


def _inputs_of(node):
    """The names ``node`` reads, its subgraphs' reads of enclosing values included."""
    names = {i for i in node.input if i}
    for attr in node.attribute:
        for g in list(attr.g.node if attr.HasField("g") else []) + \
                [n for sub in attr.graphs for n in sub.node]:
            names |= _inputs_of(g)
    return names


def remove_unused(model):
    """Drop nodes (and initializers) no graph output depends on."""
    g = model.graph
    needed = {o.name for o in g.output}
    keep = []
    for node in reversed(list(g.node)):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(_inputs_of(node))
    keep.reverse()
    if len(keep) != len(g.node):
        del g.node[:]
        g.node.extend(keep)
    inits = [t for t in g.initializer if t.name in needed]
    if len(inits) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(inits)


def _verify(program, model, args, kwargs, captured):
    import numpy as np

    from .._core.tensor import Tensor
    from ._capture import flatten_inputs
    if _is_exported_program(model):
        args, kwargs = model.example_inputs if model.example_inputs else (args, kwargs)
        expected = model.module()(*args, **(kwargs or {}))
        flat_in = [t for _, t in flatten_inputs(model.module(), args, kwargs)]
    else:
        expected = model(*args, **(kwargs or {}))
        flat_in = [t for _, t in flatten_inputs(model, args, kwargs)]
    from ._capture import flatten_outputs
    exp = flatten_outputs(expected)
    got = program(*flat_in[:len(captured.user_inputs)])
    for i, ((_, e), g) in enumerate(zip(exp, got)):
        e = e.detach().numpy() if isinstance(e, Tensor) else np.asarray(e)
        if not np.allclose(g.numpy(), e, rtol=1e-4, atol=1e-5, equal_nan=True):
            raise OnnxExporterError(f"ember.onnx.export(verify=True): output {i} of the ONNX "
                                    f"model differs from the model's (max abs difference "
                                    f"{np.max(np.abs(g.numpy() - e))})")


def _write_artifacts(artifacts_dir, model_proto, captured, report, dump):
    import collections
    os.makedirs(artifacts_dir, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    if report:
        ember_ops = collections.Counter(getattr(n.target, "name", str(n.target))
                                        for n in captured.graph.nodes if n.op == "call_function")
        onnx_ops = collections.Counter(n.op_type for n in model_proto.graph.node)
        lines = ["# ember.onnx.export report", "", f"Exported at {stamp}: success.", "",
                 "## ember operators", ""] + [f"- {k}: {v}" for k, v in sorted(ember_ops.items())]
        lines += ["", "## ONNX operators", ""] + [f"- {k}: {v}"
                                                   for k, v in sorted(onnx_ops.items())]
        with open(os.path.join(artifacts_dir, f"onnx_export_{stamp}_success.md"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
    if dump:
        with open(os.path.join(artifacts_dir, f"onnx_export_{stamp}.pt2.txt"), "w") as fh:
            fh.write(str(captured.graph))
