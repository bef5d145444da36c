"""Reading an `ExportedProgram` for lowering.

A `Captured` holds the graph, each placeholder as a user input or a weight (a parameter,
buffer or constant tensor with its value, which becomes an ONNX initializer), and which
elements of the output tuple are the user's outputs (an exported graph also returns buffer
mutations, which an ONNX model cannot perform).
"""
import dataclasses
import inspect

import numpy as np

from .._core.tensor import Tensor
from .errors import OnnxExporterError

__all__ = ["Captured", "flatten_inputs", "flatten_outputs", "from_exported_program"]


@dataclasses.dataclass
class Captured:
    graph: object
    user_inputs: list      # placeholder nodes of the user's tensors, in flattened input order
    weights: list          # (placeholder node, state_dict/constants name, ndarray)
    user_outputs: list     # indices into the output tuple
    input_names: list      # default names of the user inputs
    exported_program: object = None


def _flatten(obj, prefix, out):
    if isinstance(obj, Tensor):
        out.append((prefix, obj))
    elif isinstance(obj, (list, tuple)):
        for i, o in enumerate(obj):
            _flatten(o, f"{prefix}_{i}", out)
    elif isinstance(obj, dict):
        for k, o in obj.items():
            _flatten(o, f"{prefix}_{k}", out)


def flatten_inputs(model, args, kwargs):
    """[(default name, tensor)] of the tensors in ``args``/``kwargs``, named after
    ``model.forward``'s parameters (``x``, ``x_0`` for an element of a tuple argument)."""
    fn = getattr(model, "forward", model)
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    out = []
    for i, a in enumerate(args):
        _flatten(a, params[i] if i < len(params) else f"input_{i}", out)
    for k, a in (kwargs or {}).items():
        _flatten(a, k, out)
    return out


def _array(t):
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t)


def from_exported_program(ep):
    """The `Captured` of an ember `ExportedProgram` (parameters, buffers and constants from
    its ``state_dict``/``constants``, outputs of kind USER_OUTPUT)."""
    graph = ep.graph_module.graph
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    # inputs that are Python values (ConstantArgument) are baked into the graph: no placeholder
    specs = [s for s in ep.graph_signature.input_specs
             if type(s.arg).__name__ in ("TensorArgument", "SymIntArgument")]
    if [s.arg.name for s in specs] != list(placeholders):
        raise OnnxExporterError(f"ember.onnx.export: the ExportedProgram's signature "
                                f"({[s.arg.name for s in specs]}) does not match its "
                                f"placeholders ({list(placeholders)})")
    user, weights, names = [], [], []
    for spec in specs:
        node = placeholders[spec.arg.name]
        kind = spec.kind.name
        if kind == "USER_INPUT":
            user.append(node)
            names.append(spec.arg.name)
            continue
        if kind not in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            raise OnnxExporterError(f"ember.onnx.export: input {spec.arg.name!r} of kind {kind} "
                                    f"cannot be exported to ONNX")
        target = spec.target
        value = ep.state_dict.get(target) if target in ep.state_dict else \
            ep.constants.get(target)
        if value is None:
            raise OnnxExporterError(f"ember.onnx.export: no value for {kind.lower()} "
                                    f"{target!r} in the ExportedProgram")
        weights.append((node, target, _array(value)))
    outs = []
    for i, s in enumerate(ep.graph_signature.output_specs):
        if s.kind.name not in ("USER_OUTPUT", "LOSS_OUTPUT"):
            continue  # buffer and input mutations: an ONNX model writes no state
        if type(s.arg).__name__ != "TensorArgument":
            value = getattr(s.arg, "value", s.arg)
            raise OnnxExporterError(f"ember.onnx.export: output {len(outs)} of the program is "
                                    f"the Python value {value!r}, not a tensor; an ONNX model "
                                    f"outputs tensors only")
        outs.append(i)
    return Captured(graph, user, weights, outs, names, ep)


def flatten_outputs(result):
    out = []
    _flatten(result, "output", out)
    return out
