"""The loaded pieces put back together: a graph signature from the specs, and the program
object of the kind that was saved."""
from .. import graph_signature as gs

__all__ = ["rebuild", "signature_from_json"]


def _kind(enum_cls, name, where):
    if not isinstance(name, str) or name not in enum_cls.__members__:
        raise ValueError(f"{where}: unknown {enum_cls.__name__} {name!r}")
    return enum_cls[name]


def signature_from_json(prog, where):
    ins, outs = prog.get("input_specs"), prog.get("output_specs")
    if not isinstance(ins, list) or not isinstance(outs, list) or \
            not all(isinstance(s, dict) for s in ins + outs):
        raise ValueError(f"{where}: input_specs and output_specs must be lists of objects")
    input_specs = [gs.InputSpec(_kind(gs.InputKind, s.get("kind"), where),
                                gs.TensorArgument(name=s.get("name")), s.get("target"),
                                s.get("persistent")) for s in ins]
    output_specs = [gs.OutputSpec(_kind(gs.OutputKind, s.get("kind"), where),
                                  gs.TensorArgument(name=s.get("name")), s.get("target"))
                    for s in outs]
    return gs.ExportGraphSignature(input_specs=input_specs, output_specs=output_specs)


def rebuild(prog, gm, state_dict, constants, where):
    kind = prog.get("kind")
    if kind == "GraphModule":
        return gm
    if kind != "ExportedProgram":
        raise ValueError(f"{where}: unknown program kind {kind!r}")
    sig = signature_from_json(prog, where)
    from ..exported_program import ExportedProgram
    return ExportedProgram(gm, sig, state_dict, constants, prog)
