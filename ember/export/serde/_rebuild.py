"""The loaded pieces put back together: the graph signature, pytree specs, range
constraints, example inputs, and the `ExportedProgram` itself (a bare GraphModule for
files saved from one)."""
import collections

from .. import graph_signature as gs
from ._graph import decode_graph
from ._storage import read_tensor_array
from ._values import decode_value
from ._verify import verify_signature

__all__ = ["rebuild"]


def _kind(enum_cls, name, where):
    if not isinstance(name, str) or name not in enum_cls.__members__:
        raise ValueError(f"{where}: unknown {enum_cls.__name__} {name!r}")
    return enum_cls[name]


def _arg(obj, where):
    if isinstance(obj, dict) and len(obj) == 1:
        (tag, body), = obj.items()
        if tag == "tensor" and isinstance(body, str):
            return gs.TensorArgument(name=body)
        if tag == "symint" and isinstance(body, str):
            return gs.SymIntArgument(name=body)
        if tag == "constant":
            return gs.ConstantArgument(name="", value=decode_value(body, {}, {}, where))
    raise ValueError(f"{where}: malformed spec argument {obj!r:.100}")


def _signature(part, where):
    ins, outs = part.get("input_specs"), part.get("output_specs")
    if not isinstance(ins, list) or not isinstance(outs, list) or \
            not all(isinstance(s, dict) for s in ins + outs):
        raise ValueError(f"{where}: input_specs and output_specs must be lists of objects")
    return gs.ExportGraphSignature(
        input_specs=[gs.InputSpec(_kind(gs.InputKind, s.get("kind"), where),
                                  _arg(s.get("arg"), where), s.get("target"),
                                  s.get("persistent")) for s in ins],
        output_specs=[gs.OutputSpec(_kind(gs.OutputKind, s.get("kind"), where),
                                    _arg(s.get("arg"), where), s.get("target"))
                      for s in outs])


def _spec(obj, where):
    from ...func._pytree import _Spec
    if obj is None:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("children"), list):
        raise ValueError(f"{where}: malformed pytree spec {obj!r:.100}")
    kind = obj.get("kind")
    children = [_spec(c, where) for c in obj["children"]]
    if kind == "leaf":
        return _Spec("leaf", None, [])
    if kind in ("tuple", "list"):
        return _Spec(kind, len(children), children)
    if kind == "dict":
        keys = tuple(decode_value(k, {}, {}, where) for k in obj.get("keys", []))
        return _Spec("dict", keys, children)
    if kind == "namedtuple":
        # the user's class is not in this process: a namedtuple of the same name and fields
        name, fields = obj.get("type"), obj.get("fields")
        if not (isinstance(name, str) and name.isidentifier() and isinstance(fields, list)
                and all(isinstance(f, str) and f.isidentifier() for f in fields)):
            raise ValueError(f"{where}: malformed namedtuple spec")
        return _Spec("namedtuple", collections.namedtuple(name, fields), children)
    if kind == "custom":
        return _Spec("custom", _custom(obj, where), children)
    raise ValueError(f"{where}: unknown pytree node kind {kind!r}")


def _custom(obj, where):
    """(class, context) of a registered class's node: the class registered in this process
    under the stored name (the file never names code to import)."""
    from ...func._pytree import _REGISTRY
    name = obj.get("type")
    if not isinstance(name, str):
        raise ValueError(f"{where}: malformed custom pytree spec {obj!r:.100}")
    found = [cls for cls, entry in _REGISTRY.items() if entry[2] == name]
    if not found:
        raise NotImplementedError(
            f"{where}: the program's inputs or outputs hold a {name!r}, which is not "
            f"registered in this process: register the class first "
            f"(ember.export.register_dataclass(cls, serialized_type_name={name!r}))")
    return found[-1], decode_value(obj.get("context"), {}, {}, where)


def _ranges(prog):
    from ..guards import INT_OO, ValueRanges
    return {name: ValueRanges(e.get("min") or 0, e["max"] if type(e.get("max")) is int
                              else INT_OO)
            for name, e in prog.get("symbols", {}).items()}


def _example_inputs(obj, ar, where):
    from ..._core.tensor import wrap
    if obj is None:
        return None

    def dec(v):
        if not isinstance(v, dict):
            raise ValueError(f"{where}: malformed example input {v!r:.100}")
        if "tensor" in v:
            return wrap(read_tensor_array(v["tensor"], ar.read, where))
        if "seq" in v:
            items = [dec(x) for x in v["seq"]]
            return items if v.get("list") else tuple(items)
        if "dict" in v:
            return {decode_value(k, {}, {}, where): dec(x) for k, x in v["dict"]}
        return decode_value(v.get("value"), {}, {}, where)
    return (tuple(dec(a) for a in obj.get("args", [])),
            {k: dec(v) for k, v in obj.get("kwargs", {}).items()})


def _state_as_parameters(sig, state_dict):
    """Parameters come back as `Parameter`s, as export gave them."""
    from ...nn.parameter import Parameter
    for s in sig.input_specs:
        if s.kind is gs.InputKind.PARAMETER and s.target in state_dict:
            t = state_dict[s.target]
            state_dict[s.target] = Parameter(t.detach(), requires_grad=t.requires_grad)


def _call_graph(part, in_spec, out_spec, where):
    from ..exported_program import ModuleCallEntry, ModuleCallSignature
    calls = part.get("module_call_graph")
    if calls is None:   # schema 1: the root's entry only
        return None
    names, fqns = calls.get("forward_arg_names"), calls.get("fqns")
    if not (names is None or isinstance(names, list) and all(isinstance(n, str) for n in names)) \
            or not (isinstance(fqns, list) and all(isinstance(f, str) and f for f in fqns)):
        raise ValueError(f"{where}: module_call_graph must hold forward_arg_names (strings "
                         f"or null) and fqns (non-empty strings), got {calls!r:.100}")
    return [ModuleCallEntry("", ModuleCallSignature([], [], in_spec, out_spec, names))] + \
        [ModuleCallEntry(f) for f in fqns]


def rebuild(prog, gm, state_dict, constants, hints, ar, ctx, where):
    kind = prog.get("kind")
    if kind == "GraphModule":
        return gm
    if kind != "ExportedProgram":
        raise ValueError(f"{where}: unknown program kind {kind!r}")
    from ..exported_program import ExportedProgram
    sig = _signature(prog, where)
    _state_as_parameters(sig, state_dict)
    in_spec = _spec(prog.get("in_spec"), f"{where}: in_spec")
    out_spec = _spec(prog.get("out_spec"), f"{where}: out_spec")
    ranges = _ranges(prog)
    common = dict(module_call_graph=_call_graph(prog, in_spec, out_spec, where),
                  example_inputs=_example_inputs(prog.get("example_inputs"), ar,
                                                 f"{where}: example_inputs"),
                  constants=constants, in_spec=in_spec, out_spec=out_spec)
    alternate = None
    alt = prog.get("alternate")
    if alt is not None:
        if not isinstance(alt, dict):
            raise ValueError(f"{where}: 'alternate' must be an object")
        agm = decode_graph(alt.get("graph"), hints, f"{where}: alternate graph", ctx)
        alternate = ExportedProgram(agm, agm.graph, _signature(alt, f"{where}: alternate"),
                                    state_dict, ranges, training=alt.get("training"),
                                    **common)
    ep = ExportedProgram(gm, gm.graph, sig, state_dict, ranges, training=prog.get("training"),
                         alternate=alternate, **common)
    verify_signature(ep, where)
    if alternate is not None:
        verify_signature(alternate, f"{where}: alternate")
    if isinstance(prog.get("alternate_error"), str):
        ep.alternate_error = prog["alternate_error"]
    return ep
