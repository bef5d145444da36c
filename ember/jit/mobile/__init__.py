"""The lite interpreter (``torch.jit.mobile``), on ``ember_lite``.

``module._save_for_lite_interpreter(f)`` writes the module's program file, whose
``lite/program.json`` holds each graph decomposed to ember's primitive set;
`_load_for_lite_interpreter` loads it with ``ember_lite``, the small NumPy-only runtime,
and returns a `LiteScriptModule` that takes and returns ember Tensors (converted to and
from NumPy at the boundary).  Introspection as in torch: `_get_model_bytecode_version`
(here: the program file's format version) and `_export_operator_list`, the set of
operator names the lite program calls -- ember's primitive names with an ``ember::``
namespace prefix (torch gives ``aten::...`` names), e.g. ``{"ember::add", "ember::matmul"}``.
"""
import io
import json
import zipfile

import numpy as np

from ..._core.tensor import wrap
from .._serialization import read_bytes, read_meta
from .._program import _describe
from .._tree import flatten, unflatten

__all__ = ["LiteScriptModule", "validate_map_location", "_load_for_lite_interpreter",
           "_get_model_bytecode_version", "_export_operator_list"]


def _lite_op_names(data):
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        prog = json.loads(z.read("lite/program.json").decode("utf-8"))
    names = set()

    def walk(nodes):
        if isinstance(nodes, dict):  # a graph object: its node list
            nodes = nodes.get("graph", nodes.get("nodes", []))
        for n in nodes if isinstance(nodes, list) else ():
            if not isinstance(n, dict):
                continue
            if n.get("op") == "call_function" and n.get("target") != "getitem":
                names.add("ember::" + str(n["target"]))
            find(n.get("args"))
            find(n.get("kwargs"))

    def find(v):  # sub-graphs of cond / while_loop / map, tagged {"subgraph": ...}
        if isinstance(v, dict):
            if "subgraph" in v:
                walk(v["subgraph"])
            else:
                for x in v.values():
                    find(x)
        elif isinstance(v, list):
            for x in v:
                find(x)
    walk(prog.get("graph") or [])
    return names


class LiteScriptModule:
    """A module loaded for the lite interpreter (torch.jit.mobile.LiteScriptModule): call it
    like the saved module; it runs on ``ember_lite``."""

    def __init__(self, cpp_module):
        # torch wraps its C++ module; ember's is the loaded lite programs: cpp_module is
        # (methods: name -> (ember_lite.Program, method metadata), metadata, op names)
        self._methods, self._meta, self._op_names = cpp_module

    def __call__(self, *input):
        return self.forward(*input)

    def forward(self, *input):
        return self.run_method("forward", *input)

    def find_method(self, method_name):
        return method_name in self._methods

    def run_method(self, method_name, *input):
        if method_name not in self._methods:
            raise RuntimeError(f"Method '{method_name}' is not defined in the lite module "
                               f"(it has {sorted(self._methods)})")
        program, entry = self._methods[method_name]
        names, defaults = entry.get("arg_names") or [], entry.get("defaults") or {}
        input = tuple(input) + tuple(defaults[n] for n in names[len(input):] if n in defaults)
        flat = []
        spec = flatten(input, flat)
        if spec != entry["in_spec"]:
            raise RuntimeError(f"{method_name}(): the program was saved for inputs "
                               f"{_describe(entry['in_spec'])}, but was called with "
                               f"{_describe(spec)}")
        arrays = [np.asarray(t.detach().cpu().numpy()) for t in flat]
        outs = program(*arrays)
        return unflatten(entry["out_spec"], iter(wrap(np.array(o)) for o in outs))

    def __repr__(self):
        return f"LiteScriptModule({self._meta.get('name')})"


def validate_map_location(map_location=None):
    """``map_location`` as a device (a string is parsed), or None; anything else raises
    ValueError (torch.jit.mobile.validate_map_location)."""
    from ..._core.device import device
    if isinstance(map_location, str):
        map_location = device(map_location)
    elif not (map_location is None or isinstance(map_location, device)):
        raise ValueError(f"map_location should be either None, string or torch.device, but "
                         f"got type: {type(map_location)}")
    return map_location


def _load_for_lite_interpreter(f, map_location=None):
    """Load a file written by ``_save_for_lite_interpreter`` (or ``jit.save``) into a
    `LiteScriptModule` that runs on ``ember_lite``.  ``map_location``: only the CPU."""
    map_location = validate_map_location(map_location)
    if map_location is not None and map_location.type != "cpu":
        raise ValueError(f"map_location must be the CPU for the lite interpreter (ember_lite "
                         f"runs on NumPy), got {map_location}")
    import ember_lite
    data = read_bytes(f)
    label = str(f) if isinstance(f, str) else "_load_for_lite_interpreter"
    meta = read_meta(data, label)
    if meta is None:
        raise RuntimeError(f"{label}: not a file written by _save_for_lite_interpreter or "
                           f"ember.jit.save (no ember.jit metadata)")
    methods = {}
    ops = set()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        for name, entry in meta["methods"].items():
            raw = data if entry["file"] is None else z.read("extra/" + entry["file"])
            methods[name] = (ember_lite.load(io.BytesIO(raw)), entry)
            ops |= _lite_op_names(raw)
    return LiteScriptModule((methods, meta, ops))


def _get_model_bytecode_version(f_input):
    """The format version of the program file ``f_input`` (torch: the bytecode version)."""
    data = read_bytes(f_input)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            raw = z.read("version")
    except (zipfile.BadZipFile, KeyError):
        raise RuntimeError("_get_model_bytecode_version: not an ember program file") from None
    return int(raw.decode("ascii").strip())


def _export_operator_list(module):
    """The set of operator names the lite program of ``module`` calls (``"ember::add"``,
    ...; see the module docstring).  ``module``: a `LiteScriptModule`, or a ScriptModule
    (its program is decomposed as a lite file would hold it)."""
    if isinstance(module, LiteScriptModule):
        return set(module._op_names)
    from .._script_module import ScriptModule
    if isinstance(module, ScriptModule):
        buf = io.BytesIO()
        module._save_for_lite_interpreter(buf)
        return _export_operator_list(_load_for_lite_interpreter(io.BytesIO(buf.getvalue())))
    raise TypeError(f"_export_operator_list expects a LiteScriptModule, got "
                    f"{type(module).__name__}")


