"""The ember program file: what `ember.export.save` writes and `ember.export.load` reads.

Unlike a pickle (what ``torch.save`` of a module and TorchScript archives hold, and why
loading an untrusted checkpoint can run arbitrary code), a program file holds no code:
loading it builds a graph from operator names in ember's registry, literal arguments and
raw weight bytes, so a file from an untrusted source cannot run anything.  Before the
graph is returned it is verified: every operator's shape rule and kernel signature must
accept its arguments and agree with the metadata the file records, and the signature must
name weights the file holds.  The same file runs without ember in `ember_lite`.

Layout (a zip archive, members stored uncompressed)
---------------------------------------------------
``version``
    The format version, ASCII digits (this ember writes ``2`` and reads ``1`` and ``2``;
    version 2 is version 1 with program.json of schema 2, see below).  A reader
    that meets a version it does not know raises ``RuntimeError("this file has format
    version N; ember reads 1..M")``.
``program.json``
    The program (schema below), UTF-8 JSON.
``lite/program.json``
    The same program with its graph decomposed to ember's primitive set
    (`ember.ops.primitives.PRIMITIVES`, by `ember._inductor.passes.decompose`), which is
    what `ember_lite` runs.  Schema 1 in every format version, ``kind``
    ``"LiteProgram"``.  Sizes are folded
    into the ops' arguments as expressions; a value read from an input stays an
    ``item_at`` node whose ``meta`` ``{"int": "u0"}`` names the symbol it binds, and the
    ``assert_size`` checks on it stay.  (Files of ember before this could hold instead an
    ``"unsupported"`` string for such programs, which ember_lite.load raises.)
``data/<n>``
    Raw storages: the bytes of one C-contiguous array, little-endian.
``extra/<name>``
    The user's ``extra_files``, verbatim.

No member holds code, C included: ember_lite generates the C it runs from the graph at load
time (a C member would be code from the file, which loading never runs), so the format did
not change for it.

program.json (schema version 2)
-------------------------------
``schema_version``: 2 (files of format version 1 hold 1: the same without the fields
marked *schema 2*, which readers treat as absent).  ``kind``: ``"ExportedProgram"``
(from `ember.export.export`) or ``"GraphModule"`` (a bare graph; every placeholder a user input).
``opset_version``: ``{"ember": 1, ...}``, the operator-set versions (``opset_version=`` of
save adds namespaces; ``expected_opset_version=`` of load checks them).

``graph``: the nodes in execution order, each ``{"name", "op", ...}``:

* ``{"op": "placeholder"}``: one per input, in the order the graph takes them (parameters,
  buffers, lifted constants, then the user's flattened tensor inputs);
* ``{"op": "call_function", "target": NAME, "args": [...], "kwargs": {...}}``: NAME is an
  operator of `ember._core.op.REGISTRY` (a name ember does not know fails to load with a
  RuntimeError naming it), or ``"getitem"`` (output ``i`` of a multi-output node: args
  ``[node, i]``), ``"set_grad_enabled"`` (grad-mode switches of a compile capture), or
  the size arithmetic of exported graphs: ``"sym_size"`` (args ``[node, dim]``, the size of
  an input dimension) and ``"operator.add"``, ``"operator.sub"``, ``"operator.mul"``,
  ``"operator.floordiv"``, ``"operator.mod"``, ``"operator.neg"``, ``"sym_max"``,
  ``"sym_min"`` over sizes (their ``meta`` is ``"int"``), ``"item_at"`` (args ``[node, flat index]``: an integer read from an
  input, the unbacked ``u0``) and ``"assert_size"`` (args ``[lhs, op, rhs, message]``: a
  runtime check of what the program assumed of such a value);
* ``{"op": "output", "args": [[...]]}``: the flat list of outputs.

Each node may carry ``"meta"``: ``{"shape": [...], "dtype": NAME}`` (a list of those for a
node with several outputs).  A size is an int or a string expression over the symbols
(``"s0"``, ``"2*s0"``): integers, symbol names and ``+ - * // %`` only, parsed with
``ast`` and never evaluated as code.  Dtype names are NumPy's (``"float32"``, ``"int64"``,
``"bool"``, ``"complex64"``) and ml_dtypes' (``"bfloat16"``, ``"float8_e4m3fn"``,
``"float8_e5m2"``).

*Schema 2*: a node may carry ``"nn_module_stack"``: ``[[key, fqn, class name], ...]``, the
submodule calls (outermost first) that ran it, torch's ``node.meta["nn_module_stack"]``,
with which `ember.export.unflatten` gives each submodule its own graph.  Optional: without
it (schema 1 files) unflatten runs the whole graph at the root.  ember_lite ignores it.

Arguments are JSON values with tags for what JSON lacks: numbers, strings, booleans and
null are themselves, a JSON list is a Python list, and one-key objects are
``{"node": name}`` (another node's value), ``{"tuple": [...]}``, ``{"float": "inf" |
"-inf" | "nan"}``, ``{"complex": [re, im]}``, ``{"dtype": NAME}`` (an ember dtype),
``{"np_dtype": NAME}`` (a NumPy dtype), ``{"sym": "s0*4"}`` (a symbolic size),
``{"slice": [start, stop, step]}``, ``{"ellipsis": true}``, ``{"device": "cpu"}`` and
``{"array": entry}`` (a NumPy array literal, e.g. the index tables decompositions build,
stored like a weight: see ``state_dict`` below) and ``{"subgraph": [nodes]}`` (a function
of a higher-order op, ``cond``'s branches or ``while_loop``/``map``'s bodies: a graph in
this same format whose placeholders are its tensors, then its sizes, each size
placeholder with ``"meta": {"int": size}``).

In ``lite/program.json`` the size nodes are folded back into ``{"sym": ...}`` arguments (the
lite runtime binds the symbols from the input shapes) and every operator is a primitive,
except ops that cannot be decomposed once for all calls (random draws, ops whose output
shape depends on the values): `ember_lite` names those when it loads the file.

``input_specs``: per graph input ``{"kind", "arg", "target", "persistent"}``, kind one of
``USER_INPUT``, ``PARAMETER``, ``BUFFER``, ``CONSTANT_TENSOR`` (torch's InputKind), arg
``{"tensor": placeholder name}``, ``{"symint": name}`` or ``{"constant": argument}`` (a
Python value the program baked in; it has no placeholder), target the state_dict/constants
key.  ``output_specs``: per output ``{"kind", "arg", "target"}``, kind ``USER_OUTPUT``,
``BUFFER_MUTATION`` (the new value of buffer ``target``) or ``USER_INPUT_MUTATION``; a
constant output is not a graph output.  ``training``: the mode the program was captured in;
``alternate``: ``{"graph", "input_specs", "output_specs", "training"}``, the program of the
other mode when it differs (ExportedProgram.module() switches with ``train()``/``eval()``),
or null, with ``alternate_error`` saying why it could not be captured.
*Schema 2*: ``module_call_graph``: ``{"forward_arg_names": [...] or null, "fqns": [...]}``,
the root's argument names and the submodules exported, in order (unflatten makes them even
where no node ran); absent, the root's entry only.

``state_dict`` and ``constants``: ``{key: {"storage": "data/<n>", "dtype", "shape",
"strides", "offset"}}`` (strides and offset in elements; tensors may share a storage;
``"requires_grad": true`` where it was set).
Loading checks that the view fits in the storage.

``symbols``: ``{"s0": {"hint": example value, "min": lower bound, "max": upper bound or
null}}``, the dynamic sizes and their range constraints.  ``in_spec``/``out_spec``: the
pytree specs of the user's inputs and outputs (null when absent).  A spec node is
``{"kind": "leaf" | "tuple" | "list" | "dict" | "namedtuple", "children": [...]}`` with
``"keys"`` (arguments) for a dict and ``"type"``/``"fields"`` for a namedtuple (loading
makes a namedtuple of that name and fields: the user's class is not needed).  *Schema 2*:
``"kind": "custom"``, a class registered with ``register_dataclass`` or
``register_pytree_node``, has ``"type"``, the ``serialized_type_name`` it was registered
under (saving one registered without a name raises NotImplementedError, as torch), and
``"context"``, its flatten context as an argument (a dataclass's ``[[kept fields], [None
fields]]`` tuples).  Loading never imports it: the class registered under that name in the
loading process is used, and a name no class is registered under raises
NotImplementedError saying to register it.
``example_inputs``: ``{"args": [...], "kwargs": {...}}`` with each tensor a storage entry
``{"tensor": entry}``, other values ``{"value": argument}``, containers ``{"seq": [...],
"list": bool}`` and ``{"dict": [[key, value], ...]}``.

The lite graph's JSON has ``schema_version``, ``opset_version``, ``symbols``,
``state_dict``, ``constants``, ``input_specs``, ``output_specs`` and ``graph`` as above.

Errors: a file that is not a zip, a truncated one, a missing member, invalid JSON, an
unknown version, dtype, operator or argument tag, or a shape that does not fit its storage
raises RuntimeError or ValueError naming the file and what is wrong, never a zipfile, JSON
or NumPy exception.
"""
from ._program import (FORMAT_VERSION, OPSET_VERSION, SCHEMA_VERSION, load_program,
                       save_program)

__all__ = ["save_program", "load_program", "FORMAT_VERSION", "SCHEMA_VERSION",
           "OPSET_VERSION"]
