"""``jit.save`` and ``jit.load``: ScriptModules in ember's program file.

A saved ScriptModule IS an ember program file (`ember.export.serde`): its ``forward`` is
the file's program (so ``ember.export.load`` and ``ember_lite`` read it too), its weights
the file's state_dict.  What TorchScript adds rides in the file's extra members:

``ember_jit.json``
    ``{"format": 1, "kind": "module" | "function", "name", "qualified_name", "training",
    "main": NAME, "methods": {NAME: {"in_spec", "out_spec", "arg_names", "code",
    "file"}}, "buffers": [...], "non_persistent": [...]}``: each method's input and
    output structure (ember.jit's JSON specs), parameter names and readable code, and
    which extra member holds it (``null`` for the main method, the file's own program).
``ember_jit.method.<NAME>``
    Every other method (``@jit.export``) as a complete program file of its own.
The user's ``_extra_files`` are stored as extra members under their own names.

Loading builds a `RecursiveScriptModule` from the file alone: its parameters and buffers
under their original names (submodules as plain containers), each method running its
saved program.  No Python class and no code from the file are needed or run.
"""
import io
import json
import os
import zipfile

from .._core.tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ._script_module import (ModuleState, ProgramMethod, RecursiveScriptModule,
                             ScriptFunction, ScriptModule)
from ._printing import program_code

__all__ = ["save", "load", "save_for_lite_interpreter", "exported_program_of", "read_bytes",
           "META", "METHOD_PREFIX"]

META = "ember_jit.json"
METHOD_PREFIX = "ember_jit.method."
FORMAT = 1


def _methods(obj):
    if isinstance(obj, ScriptFunction):
        return {obj.name: obj._method}, None
    if isinstance(obj, ScriptModule):
        return dict(obj.__dict__["_jit_methods"]), obj
    raise TypeError(f"jit.save: expected a ScriptModule or ScriptFunction (from ember.jit.script "
                    f"or ember.jit.trace), got {type(obj).__name__}")


def exported_program_of(program, owner):
    """An ExportedProgram of ``program`` with ``owner``'s current parameters and buffers."""
    from ..export import ExportedProgram
    from ..export.graph_signature import (ExportGraphSignature, InputKind, InputSpec,
                                          OutputKind, OutputSpec, TensorArgument)
    state = ModuleState(owner) if owner is not None else None
    gm = program.graph_module
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    kinds = {"parameter": InputKind.PARAMETER, "buffer": InputKind.BUFFER,
             "constant": InputKind.CONSTANT_TENSOR, "input": InputKind.USER_INPUT}
    non_persistent = set()
    if owner is not None:
        for name, _ in owner.named_buffers():
            mod, _, leaf = name.rpartition(".")
            o = owner.get_submodule(mod) if mod else owner
            if leaf in o._non_persistent_buffers_set:
                non_persistent.add(name)
    in_specs, state_dict, constants = [], {}, dict(program.constants)
    for node, (kind, target) in zip(placeholders, program.input_specs):
        k = kinds[kind]
        if kind == "buffer" and target in non_persistent:
            constants[target] = state.get(target)
            in_specs.append(InputSpec(k, TensorArgument(node.name), target, False))
            continue
        in_specs.append(InputSpec(k, TensorArgument(node.name), None if kind == "input"
                                  else target, True if kind == "buffer" else None))
        if kind in ("parameter", "buffer"):
            state_dict[target] = state.get(target)
    outs = gm.graph.output_node().args[0] if hasattr(gm.graph, "output_node") else None
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    nmut = len(program.buffer_mutations)
    out_specs = [OutputSpec(OutputKind.BUFFER_MUTATION, TensorArgument(getattr(o, "name", "")),
                            program.buffer_mutations[i]) if i < nmut else
                 OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(getattr(o, "name", "")), None)
                 for i, o in enumerate(outs)]
    ep = program.exported
    ranges = dict(ep.range_constraints) if ep is not None else {}
    alternate = exported_program_of(program.alternate, owner) \
        if program.alternate is not None else None
    if alternate is not None:  # the file's symbol table serves both graphs
        ranges = {**alternate.range_constraints, **ranges}
    return ExportedProgram(gm, gm.graph, ExportGraphSignature(in_specs, out_specs), state_dict,
                           ranges, constants=constants,
                           in_spec=getattr(ep, "_in_spec", None) if ep is not None else None,
                           out_spec=getattr(ep, "_out_spec", None) if ep is not None else None,
                           training=program.training, alternate=alternate)


def _program_bytes(program, owner, extra):
    from ..export.serde import save_program
    buf = io.BytesIO()
    save_program(exported_program_of(program, owner), buf, extra_files=extra)
    return buf.getvalue()


def _write(f, data):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            fh.write(data)
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"jit.save: f must be a path or a writable binary file, got "
                        f"{type(f).__name__}")


def _file_bytes(obj, _extra_files, main=None):
    methods, owner = _methods(obj)
    main = main or ("forward" if "forward" in methods else next(iter(methods)))
    meta = {"format": FORMAT, "kind": "function" if owner is None else "module",
            "name": obj.original_name if owner is not None else obj.name,
            "qualified_name": getattr(obj, "qualified_name", None),
            "training": owner.training if owner is not None else False,
            "main": main, "methods": {}}
    extra = {}
    for name, m in methods.items():
        program = m.program()
        meta["methods"][name] = {"in_spec": program.in_spec, "out_spec": program.out_spec,
                                 "arg_names": list(m.arg_names or []),
                                 "defaults": _json_defaults(m),
                                 "check_shapes": bool(program.check_shapes),
                                 "code": program_code(program, name, owner is not None),
                                 "file": None if name == main else METHOD_PREFIX + name}
        if name != main:
            extra[METHOD_PREFIX + name] = _program_bytes(program, owner, None)
    if owner is not None:
        meta["buffers"] = [n for n, _ in owner.named_buffers()]
        meta["parameters"] = [n for n, _ in owner.named_parameters()]
    for k, v in (_extra_files or {}).items():
        if k == META or k.startswith(METHOD_PREFIX):
            raise ValueError(f"jit.save: extra file name {k!r} is reserved by ember.jit")
        extra[k] = v
    extra[META] = json.dumps(meta)
    return _program_bytes(methods[main].program(), owner, extra)


def _json_defaults(method):
    """The defaults of a method's trailing arguments that JSON can hold (Python constants)."""
    sig = getattr(method, "signature", None)
    d = sig.defaults if sig is not None else getattr(method, "defaults", {}) or {}
    return {k: v for k, v in d.items() if v is None or type(v) in (bool, int, float, str)}


def save(m, f, _extra_files=None):
    """Save ``m`` (a ScriptModule or ScriptFunction) to ``f``, a path or a binary file
    object (torch.jit.save): its programs, parameters and buffers, and ``_extra_files``
    (``{name: str or bytes}``).  A scripted module must have been called once (its
    program is captured from that call); see ``ember.jit._script``."""
    _write(f, _file_bytes(m, _extra_files))


def save_for_lite_interpreter(m, f, _extra_files=None, **kwargs):
    """The lite-interpreter file: the same program file, whose ``lite/program.json`` (the
    graph decomposed to ember's primitives) is what ``ember_lite`` runs."""
    if kwargs:
        raise TypeError(f"_save_for_lite_interpreter() got unexpected keyword arguments "
                        f"{sorted(kwargs)}")
    _write(f, _file_bytes(m, _extra_files))


def read_bytes(f):
    if isinstance(f, (str, os.PathLike)):
        if not os.path.exists(f):
            raise ValueError(f"The provided filename {os.fspath(f)} does not exist")
        if os.path.isdir(f):
            raise ValueError(f"The provided filename {os.fspath(f)} is a directory")
        with open(f, "rb") as fh:
            return fh.read()
    if hasattr(f, "read"):
        return f.read()
    raise TypeError(f"jit.load: f must be a path or a readable binary file, got "
                    f"{type(f).__name__}")


def read_meta(data, label):
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = set(z.namelist())
            if "extra/" + META not in names:
                return None
            return json.loads(z.read("extra/" + META).decode("utf-8"))
    except zipfile.BadZipFile:
        raise RuntimeError(f"{label}: not an ember program file (not a zip archive); files "
                           f"written by torch.jit.save cannot be read by ember") from None


def _load_program(data, extra_files=None):
    from ..export.serde import load_program
    return load_program(io.BytesIO(data), extra_files=extra_files)


def _program_from(ep, entry):
    from ._capture import program_of_exported
    p = program_of_exported(ep, (), entry["out_spec"], check_inputs=False)
    p.in_spec = entry["in_spec"]
    p.check_shapes = bool(entry.get("check_shapes", True))
    if p.alternate is not None:
        p.alternate.in_spec = entry["in_spec"]
        p.alternate.check_shapes = p.check_shapes
    return p


def _set_state(root, name, value, is_param):
    *path, leaf = name.split(".")
    mod = root
    for part in path:
        child = mod._modules.get(part)
        if child is None:
            child = Module()
            mod._modules[part] = child
        mod = child
    if is_param:
        mod._parameters[leaf] = value if isinstance(value, Parameter) else \
            Parameter(value.detach(), requires_grad=value.requires_grad)
    else:
        mod._buffers[leaf] = value


def _map_location(t, map_location):
    if map_location is None or not isinstance(t, Tensor):
        return t
    out = t.to(map_location)
    if isinstance(t, Parameter) and not isinstance(out, Parameter):
        out = Parameter(out.detach(), requires_grad=t.requires_grad)
    return out


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Load a ScriptModule or ScriptFunction saved with ``jit.save`` (torch.jit.load).

    The result runs the saved programs; the module's class is not needed (a fresh process
    that never defined it loads and runs it).  ``map_location`` moves the parameters and
    buffers (a device or string); ``_extra_files`` (``{name: ''}``) is filled in with the
    stored extra files.  Nothing in the file is executed as code."""
    label = os.fspath(f) if isinstance(f, (str, os.PathLike)) else "jit.load"
    data = read_bytes(f)
    meta = read_meta(data, label)
    extra = {k: "" for k in (_extra_files or {})}
    ep = _load_program(data, extra)
    if _extra_files is not None:
        _extra_files.update(extra)
    if meta is None:
        raise RuntimeError(f"{label}: an ember program file without ember.jit's metadata "
                           f"(written by ember.export.save?): load it with ember.export.load")
    if meta.get("format") != FORMAT:
        raise RuntimeError(f"{label}: ember.jit metadata format {meta.get('format')!r}; this "
                           f"ember reads {FORMAT}")
    methods = []
    eps = {}
    for name, entry in meta["methods"].items():
        if entry["file"] is None:
            sub = ep
        else:
            sub_extra = {entry["file"]: b""}
            _load_program(data, sub_extra)
            raw = sub_extra[entry["file"]]
            sub = _load_program(raw if isinstance(raw, bytes) else raw.encode("utf-8"))
        eps[name] = sub
        methods.append(ProgramMethod(name, _program_from(sub, entry), entry["arg_names"],
                                     entry.get("defaults")))
    if meta["kind"] == "function":
        fn = ScriptFunction(methods[0], meta.get("qualified_name") or methods[0].name)
        return fn
    m = RecursiveScriptModule()
    m.__dict__["_jit_original_name"] = meta["name"]
    m.__dict__["training"] = bool(meta.get("training"))
    buffers = set(meta.get("buffers", []))
    for sub in eps.values():
        for k, v in sub.state_dict.items():
            _set_state(m, k, _map_location(v, map_location), k not in buffers)
        for k, v in sub.constants.items():
            if k in buffers:  # a non-persistent buffer
                _set_state(m, k, _map_location(v, map_location), False)
                mod, _, leaf = k.rpartition(".")
                (m.get_submodule(mod) if mod else m)._non_persistent_buffers_set.add(leaf)
    for meth in methods:
        m.__dict__["_jit_methods"][meth.name] = meth
    return m
