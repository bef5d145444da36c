"""save_program / load_program: the zip container (see the package docstring)."""
import json
import os
import uuid
import zipfile

import numpy as np

from ..._dynamo.symbolic import SymInt
from ._context import Decoder, Encoder, LiteEncoder
from ._graph import decode_graph, encode_graph
from ._lite_graph import lite_graph
from ._storage import StorageWriter, read_tensor_array
from ._values import check_expr, encode_value
from ember_lite._format import _Archive

__all__ = ["save_program", "load_program", "FORMAT_VERSION", "SCHEMA_VERSION",
           "OPSET_VERSION", "read_archive"]

# version 2 added the optional ``nn_module_stack`` of nodes, ``module_call_graph`` and
# pytree nodes of registered classes (kind "custom") to program.json; lite/program.json
# did not change (schema 1)
FORMAT_VERSION = 2      # the zip layout (the ``version`` member)
SCHEMA_VERSION = 2      # the JSON schema of program.json
LITE_SCHEMA_VERSION = 1  # the JSON schema of lite/program.json
OPSET_VERSION = {"ember": 1}  # the operator set the graphs call
_READS = range(1, FORMAT_VERSION + 1)
_SCHEMAS = range(1, SCHEMA_VERSION + 1)
_INT_OO = 2 ** 63 - 1   # torch's int_oo: no upper bound


# ---- what a program holds, whatever object it came from ----------------------------------
def _arg_json(arg):
    if hasattr(arg, "value"):  # ConstantArgument: a Python value the program baked in
        return {"constant": encode_value(arg.value, lambda _: None)}
    kind = "symint" if type(arg).__name__ == "SymIntArgument" else "tensor"
    return {kind: getattr(arg, "name", None)}


def _specs(ep, gm):
    """(input specs, output specs) as JSON, from an ExportedProgram's graph signature, or
    every placeholder a user input and every output a user output for a bare GraphModule."""
    sig = getattr(ep, "graph_signature", None)
    if sig is None:
        ins = [{"kind": "USER_INPUT", "arg": {"tensor": n.name}, "target": None,
                "persistent": None} for n in gm.graph.nodes if n.op == "placeholder"]
        out = next(n for n in gm.graph.nodes if n.op == "output")
        vals = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
        outs = [{"kind": "USER_OUTPUT", "arg": {"tensor": getattr(v, "name", None)},
                 "target": None} for v in vals]
        return ins, outs
    ins = [{"kind": s.kind.name, "arg": _arg_json(s.arg), "target": s.target,
            "persistent": getattr(s, "persistent", None)} for s in sig.input_specs]
    outs = [{"kind": s.kind.name, "arg": _arg_json(s.arg), "target": s.target}
            for s in sig.output_specs]
    return ins, outs


def _array(t):
    data = getattr(t, "_data", None)
    if data is not None and not isinstance(data, np.ndarray) and hasattr(t, "cpu"):
        data = t.detach().cpu()._data  # a device tensor: its host copy is what is stored
    return np.asarray(data if data is not None else t)


def _symbols(gm, range_constraints):
    """``{"s0": {"hint": example value, "min": lo, "max": hi or None}}``."""
    out = {}
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        for m in (val if isinstance(val, (tuple, list)) else (val,)):
            for s in getattr(m, "shape", ()):
                e = getattr(s, "expr", None)
                if isinstance(s, SymInt) and isinstance(e, str) and e.isidentifier():
                    out.setdefault(e, {"hint": int(s), "min": 0, "max": None})
    for name, r in (range_constraints or {}).items():
        lo, hi = getattr(r, "lower", None), getattr(r, "upper", None)
        entry = out.setdefault(str(name), {"hint": None, "min": 0, "max": None})
        entry["min"] = int(lo) if lo is not None and np.isfinite(float(lo)) else 0
        entry["max"] = int(hi) if hi is not None and np.isfinite(float(hi)) and \
            int(hi) < _INT_OO else None
    return out


def _example_inputs(ep, writer):
    """The example inputs: tensors as storages (``{"tensor": entry}``), other values as
    arguments, containers as ``{"seq"}``/``{"dict"}``."""
    ex = getattr(ep, "example_inputs", None)
    if ex is None:
        return None
    args, kwargs = ex if isinstance(ex, tuple) and len(ex) == 2 else (ex, {})

    def enc(v):
        if hasattr(v, "_data") and hasattr(v, "dtype"):
            return {"tensor": writer.add(_array(v))}
        if isinstance(v, (tuple, list)):
            return {"seq": [enc(x) for x in v], "list": isinstance(v, list)}
        if isinstance(v, dict):
            return {"dict": [[encode_value(k, lambda _: None), enc(x)] for k, x in v.items()]}
        try:
            return {"value": encode_value(v, lambda _: None)}
        except ValueError:
            return {"value": None}
    return {"args": [enc(a) for a in args],
            "kwargs": {str(k): enc(v) for k, v in (kwargs or {}).items()}}


def _tensors_json(ep, writer):
    out = {}
    for group in ("state_dict", "constants"):
        table = {}
        tensors = getattr(ep, group, None) if hasattr(ep, "graph_module") else None
        for k, t in (tensors or {}).items():
            if not hasattr(t, "_data"):
                continue  # torch's constants may hold non-tensors (script objects): none here
            entry = writer.add(_array(t))
            if getattr(t, "requires_grad", False):
                entry["requires_grad"] = True
            table[str(k)] = entry
        out[group] = table
    return out


def _custom_json(cls, context):
    """(serialized type name, context as a tagged literal) of a registered class's node.
    The file names the class by the name it was registered under, never by import path:
    loading looks that name up among the classes registered in the loading process."""
    from ...func._pytree import _REGISTRY
    name = _REGISTRY[cls][2]
    if name is None:  # as torch: no name given at registration, nothing to save it by
        raise NotImplementedError(
            f"No registered serialization name for {cls} found. Please update your "
            f"register_dataclass (or register_pytree_node) call with a "
            f"`serialized_type_name` kwarg.")
    try:
        return name, encode_value(context, lambda _: None)
    except ValueError:
        raise TypeError(f"ember.export.save: the pytree context of {cls.__qualname__} "
                        f"({context!r:.100}) is not a plain value (None, bool, int, float, "
                        f"str, tuples and lists of them)") from None


def _spec_json(spec):
    """A pytree spec (`ember.func._pytree`) as JSON: ``{"kind", "children", ...}`` with
    dict keys and namedtuple type names and fields spelled out."""
    if spec is None:
        return None
    kind = spec.kind
    node = {"kind": kind, "children": [_spec_json(c) for c in spec.children]}
    if kind == "dict":
        node["keys"] = [encode_value(k, lambda _: None) for k in spec.meta]
    elif kind == "namedtuple":
        node["type"] = spec.meta.__name__
        node["fields"] = list(spec.meta._fields)
    elif kind == "custom":
        node["type"], node["context"] = _custom_json(*spec.meta)
    elif kind not in ("leaf", "tuple", "list"):
        raise ValueError(f"ember.export.save: cannot encode a pytree node of kind {kind!r}")
    return node


def _call_graph_json(ep):
    """``{"module_call_graph": {"forward_arg_names", "fqns"}}``: the submodules exported
    (unflatten makes them, in this order, even those no node ran in)."""
    calls = getattr(ep, "module_call_graph", None)
    if not calls:
        return {}
    sig = calls[0].signature
    names = getattr(sig, "forward_arg_names", None)
    return {"module_call_graph": {"forward_arg_names": list(names) if names else None,
                                  "fqns": [c.fqn for c in calls[1:]]}}


def _graph_part(ep, gm, writer):
    ins, outs = _specs(ep, gm)
    part = _call_graph_json(ep)
    return {**part, "graph": encode_graph(gm.graph, Encoder(writer)), "input_specs": ins,
            "output_specs": outs, "training": getattr(ep, "training", None)}


def _program_json(ep, gm, writer, opset_version):
    rc = getattr(ep, "range_constraints", None)
    tensors = _tensors_json(ep, writer)
    symbols = _symbols(gm, rc)
    main = _graph_part(ep, gm, writer)
    common = {"schema_version": SCHEMA_VERSION, "opset_version": opset_version,
              "symbols": symbols, **tensors}
    exported = hasattr(ep, "graph_signature")
    alternate = getattr(ep, "alternate", None)
    full = dict(common, kind="ExportedProgram" if exported else "GraphModule", **main,
                in_spec=_spec_json(getattr(ep, "_in_spec", None)),
                out_spec=_spec_json(getattr(ep, "_out_spec", None)),
                example_inputs=_example_inputs(ep, writer) if exported else None,
                alternate=_graph_part(alternate, alternate.graph_module, writer)
                if alternate is not None else None,
                alternate_error=getattr(ep, "alternate_error", None))
    hints = {k: e["hint"] if e["hint"] is not None else max(2, e["min"])
             for k, e in symbols.items()}
    lite = dict(common, schema_version=LITE_SCHEMA_VERSION, kind="LiteProgram",
                graph=lite_graph(gm, hints, LiteEncoder(writer, hints)),
                input_specs=main["input_specs"], output_specs=main["output_specs"])
    return full, lite


def save_program(ep, f, *, extra_files=None, opset_version=None):
    """Save an ExportedProgram (or a GraphModule of ember ops) to ``f``, a path, an
    ``os.PathLike`` or a writable binary file object, in the program format of this
    package's docstring.  ``extra_files``: ``{name: str or bytes}`` stored alongside;
    ``opset_version``: ``{namespace: version}`` recorded with ember's own."""
    gm = ep if not hasattr(ep, "graph_module") else ep.graph_module
    if not hasattr(gm, "graph"):
        raise TypeError(f"ember.export.save: expected an ExportedProgram, got "
                        f"{type(ep).__name__}")
    opset = dict(OPSET_VERSION)
    for k, v in (opset_version or {}).items():
        if not isinstance(k, str) or type(v) is not int:
            raise TypeError("ember.export.save: opset_version must map namespace names to "
                            f"int versions, got {k!r}: {v!r}")
        opset[k] = v
    writer = StorageWriter()
    full, lite = _program_json(ep, gm, writer, opset)
    members = {"version": str(FORMAT_VERSION).encode(),
               "program.json": json.dumps(full, allow_nan=False).encode(),
               "lite/program.json": json.dumps(lite, allow_nan=False).encode()}
    members.update(writer.blobs)
    for name, content in (extra_files or {}).items():
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise ValueError(f"ember.export.save: extra file name {name!r} must be a plain "
                             f"file name")
        members[f"extra/{name}"] = content.encode() if isinstance(content, str) else \
            bytes(content)
    _write_zip(f, members)


def _write_zip(f, members):
    def write(fileobj):
        with zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED) as z:
            for name, data in members.items():
                z.writestr(name, data)
    if not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):
        raise TypeError(f"ember.export.save: f must be a path or a writable binary file "
                        f"object, got {type(f).__name__}")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        d, base = os.path.split(os.path.abspath(path))
        tmp = os.path.join(d, f".{base}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        try:  # atomic: a crash leaves the old file or the new one, never half of one
            with open(tmp, "xb") as fh:  # the umask's permissions, as a plain open gives
                write(fh)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    else:
        write(f)


# ---- reading ---------------------------------------------------------------------------
def read_archive(f):
    """(archive, its program.json), after the format and schema version checks."""
    ar = _Archive(f, "ember.export.load")
    raw = ar.read("version").strip()
    try:
        version = int(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"{ar.label}: malformed format version {raw[:20]!r}") from None
    if version not in _READS:
        raise RuntimeError(f"{ar.label}: this file has format version {version}; ember reads "
                           f"{_READS.start}..{_READS.stop - 1}")
    prog = ar.json("program.json")
    sv = prog.get("schema_version")
    if sv not in _SCHEMAS or type(sv) is not int:
        raise RuntimeError(f"{ar.label}: program.json has schema version {sv!r}; ember reads "
                           f"{_SCHEMAS.start}..{_SCHEMAS.stop - 1}")
    return ar, prog


def _hints(prog, where):
    symbols = prog.get("symbols", {})
    if not isinstance(symbols, dict):
        raise ValueError(f"{where}: 'symbols' must be an object")
    hints = {}
    for name, e in symbols.items():
        if not (isinstance(name, str) and name.isidentifier() and isinstance(e, dict)):
            raise ValueError(f"{where}: malformed symbol entry {name!r}: {e!r}")
        check_expr(name)
        h = e.get("hint")
        hints[name] = h if type(h) is int else max(2, e.get("min") or 0)
    return hints


def _tensor_table(ar, prog, group):
    from ..._core.tensor import wrap
    table = prog.get(group, {})
    if not isinstance(table, dict):
        raise ValueError(f"{ar.label}: {group!r} must be an object")
    out = {}
    for k, e in table.items():
        t = wrap(read_tensor_array(e, ar.read, f"{ar.label}: {group}[{k!r}]"))
        if isinstance(e, dict) and e.get("requires_grad") is True:
            t.requires_grad_(True)
        out[k] = t
    return out


def _check_opset(ar, prog, expected):
    stored = prog.get("opset_version") or {}
    for ns, v in (expected or {}).items():
        if stored.get(ns) != v:
            raise RuntimeError(f"{ar.label}: the program was saved with opset {ns!r} version "
                               f"{stored.get(ns)}, but version {v} was expected")
    ours = OPSET_VERSION["ember"]
    if type(stored.get("ember")) is int and stored["ember"] > ours:
        raise RuntimeError(f"{ar.label}: the program uses ember opset version "
                           f"{stored['ember']}; this ember reads up to {ours}")


def load_program(f, *, extra_files=None, expected_opset_version=None):
    """Load a program saved by `save_program`.  Never runs code from the file: the graph is
    rebuilt from operator names in ember's registry and tagged literals, sizes are
    expressions parsed with ``ast`` (integers, symbols, ``+ - * // %``), and weights are raw
    bytes.  ``extra_files``: ``{name: ignored}``, filled in with the stored contents (str
    when they are UTF-8 text, else bytes)."""
    ar, prog = read_archive(f)
    try:
        return _load(ar, prog, extra_files, expected_opset_version)
    except (TypeError, AttributeError, KeyError, IndexError, RecursionError) as e:
        # a structure the checks did not foresee (a list where an object belongs, ...)
        raise ValueError(f"{ar.label}: malformed program file ({type(e).__name__}: "
                         f"{e})") from None


def _load(ar, prog, extra_files, expected_opset_version):
    _check_opset(ar, prog, expected_opset_version)
    where = f"{ar.label}: program.json"
    hints = _hints(prog, where)
    ctx = Decoder(ar, hints, where)
    gm = decode_graph(prog.get("graph"), hints, f"{where}: graph", ctx)
    state_dict = _tensor_table(ar, prog, "state_dict")
    constants = _tensor_table(ar, prog, "constants")
    if extra_files is not None:
        for name in list(extra_files):
            raw = ar.read(f"extra/{name}")
            try:
                extra_files[name] = raw.decode("utf-8")
            except UnicodeDecodeError:
                extra_files[name] = raw
    from ._rebuild import rebuild
    return rebuild(prog, gm, state_dict, constants, hints, ar, ctx, where)
