"""Getting the graph to lower: from an `ExportedProgram`, or by capturing a module.

Both give a `Captured`: the graph, each placeholder as a user input or a weight (a
parameter, buffer or constant tensor with its value, which becomes an ONNX initializer), and
which elements of the output tuple are the user's outputs (an exported graph also returns
buffer mutations, which an ONNX model cannot perform).
"""
import dataclasses
import inspect

import numpy as np

from .._core.tensor import Tensor
from .errors import OnnxExporterError

__all__ = ["Captured", "flatten_inputs", "from_exported_program", "from_module"]


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
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    specs = list(ep.graph_signature.input_specs)
    if len(specs) != len(placeholders):
        raise OnnxExporterError(f"ember.onnx.export: the ExportedProgram's signature lists "
                                f"{len(specs)} inputs for {len(placeholders)} placeholders")
    user, weights, names = [], [], []
    for node, spec in zip(placeholders, specs):
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
    outs = [i for i, s in enumerate(ep.graph_signature.output_specs)
            if s.kind.name in ("USER_OUTPUT", "LOSS_OUTPUT")]
    return Captured(graph, user, weights, outs, names, ep)


def from_module(model, args, kwargs, dynamic_dims):
    """Capture ``model(*args, **kwargs)`` whole with the compile capture.

    ``dynamic_dims``: {flat input index: dims} to compile as symbolic sizes.  The example
    tensors are cloned first (marking dims dynamic must not touch the caller's tensors)."""
    from .._dynamo.eval_frame import compile as _compile
    from .._dynamo.eval_frame import mark_dynamic
    from ..autograd import no_grad

    flat = flatten_inputs(model, args, kwargs)
    clones = {}

    def clone(obj):
        if isinstance(obj, Tensor):
            c = obj.detach().clone()
            clones[id(obj)] = c
            return c
        if isinstance(obj, (list, tuple)):
            return type(obj)(clone(o) for o in obj)
        if isinstance(obj, dict):
            return {k: clone(o) for k, o in obj.items()}
        return obj

    args2, kwargs2 = clone(tuple(args)), clone(dict(kwargs or {}))
    flat_clones = [clones[id(t)] for _, t in flat]
    for i, dims in dynamic_dims.items():
        for d in dims:
            mark_dynamic(flat_clones[i], d)
    got = []

    def backend(gm, example_inputs):
        got.append((gm, list(example_inputs)))
        return gm.forward

    with no_grad():
        result = _compile(model, backend=backend, fullgraph=True)(*args2, **kwargs2)
    if len(got) != 1:
        raise OnnxExporterError(f"ember.onnx.export: capturing the model gave {len(got)} graphs; "
                                f"an ONNX model needs exactly one")
    gm, example = got[0]
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    by_id = {id(t): i for i, t in enumerate(flat_clones)}
    names = {}
    if hasattr(model, "named_parameters"):
        for n, p in list(model.named_parameters()) + list(model.named_buffers()):
            names.setdefault(id(p), n)
    user = [None] * len(flat_clones)
    weights = []
    for node, value in zip(placeholders, example):
        if isinstance(value, Tensor) and id(value) in by_id:
            user[by_id[id(value)]] = node
        elif isinstance(value, Tensor):
            weights.append((node, names.get(id(value), node.name), _array(value)))
        else:
            raise OnnxExporterError(f"ember.onnx.export: the captured graph takes the non-tensor "
                                    f"input {node.name!r} ({value!r})")
    unused = [i for i, u in enumerate(user) if u is None]
    user = [u for u in user if u is not None]
    in_names = [flat[i][0] for i in range(len(flat)) if i not in unused]
    # the capture also returns intermediate values it kept alive: the user's outputs are
    # found among the graph outputs by value
    values = gm(*example)
    values = values if isinstance(values, (tuple, list)) else (values,)
    user_outs = []
    for _, t in _flat_outputs(result):
        a = _array(t)
        for j, v in enumerate(values):
            if j in user_outs or not isinstance(v, Tensor):
                continue
            va = _array(v)
            if va.shape == a.shape and va.dtype == a.dtype and \
                    np.array_equal(va, a, equal_nan=va.dtype.kind in "fc"):
                user_outs.append(j)
                break
        else:
            raise OnnxExporterError("ember.onnx.export: an output of the model is not computed "
                                    "by the captured graph (an input returned as is?)")
    return Captured(graph, user, weights, user_outs, in_names), unused


def _flat_outputs(result):
    out = []
    _flatten(result, "output", out)
    return out
