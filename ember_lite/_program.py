"""`Program`: a loaded lite program, run node by node with the NumPy kernels or through
the C its graph generates (`ember_lite._cgen`)."""
import os

import numpy as np

from ._format import eval_size, np_dtype, open_program, read_array
from ._graph import Graph, Ref, decode

__all__ = ["Program", "load"]


class _Context:
    """What decoding needs from the file: array literals and sub-graphs."""

    def __init__(self, ar, where):
        self.ar, self.where = ar, where

    def array(self, entry):
        return read_array(entry, self.ar, f"{self.where}: array literal")

    def subgraph(self, nodes, where):
        return Graph(nodes, f"{where}: sub-graph", self)


class Program:
    """A program loaded from an ember program file.  Call it with the user's inputs
    (NumPy arrays, or anything `numpy.asarray` accepts) in the order the exported function
    took them; weights come from the file.  Returns a tuple of NumPy arrays, the user
    outputs.  Buffers the program writes (BatchNorm's running statistics in training mode)
    keep their new values for the next call, as in the exported module, and a user input the
    program writes in place is written into the array passed (which must be a writable
    NumPy array of the input's dtype).

    ``backend`` is ``"c"`` when the program runs as one C function generated from its graph
    at load time (`ember_lite._cgen`; never C from the file), else ``"numpy"``;
    ``uses_c_kernels`` says the same as a bool and ``c_info`` why not (``reason``) or how
    (the library's ``path``, ``compiler``, ``flags``, and ``compiled``: whether this
    process compiled it or found it in the cache)."""

    def __init__(self, prog, ar, c_kernels=True):
        where = f"{ar.label}: lite/program.json"
        self._label = ar.label
        self._weights = {}
        for group in ("state_dict", "constants"):
            table = prog.get(group, {})
            if not isinstance(table, dict):
                raise ValueError(f"{where}: {group!r} must be an object")
            for k, e in table.items():
                self._weights[k] = read_array(e, ar, f"{where}: {group}[{k!r}]")
        self._symbols = {}
        for name, e in (prog.get("symbols") or {}).items():
            if not (isinstance(name, str) and name.isidentifier() and isinstance(e, dict)
                    and type(e.get("min") or 0) is int
                    and (e.get("max") is None or type(e.get("max")) is int)):
                raise ValueError(f"{where}: malformed symbol {name!r}: {e!r:.100}")
            self._symbols[name] = (e.get("min") or 0, e.get("max"))
        ctx = _Context(ar, where)
        self._compile_graph(prog, where, ctx)
        self._c, self.c_info = None, {"reason": "not requested (c_kernels=False)"}
        if c_kernels:
            self._prepare_c(prog, ctx)

    def _prepare_c(self, prog, ctx):
        for name, key, meta in self._inputs:
            w = self._weights.get(key) if key is not None else None
            if w is not None and not (isinstance(meta, dict) and w.dtype == np_dtype(
                    meta.get("dtype"), name) and list(w.shape) == meta.get("shape")):
                self.c_info = {"reason": f"weight {key!r} does not match placeholder {name}'s "
                                         f"recorded shape and dtype"}
                return
        if os.environ.get("EMBER_LITE_C", "1") == "0":
            self.c_info = {"reason": "disabled by EMBER_LITE_C=0"}
            return
        from . import _crun   # the C machinery is imported only by a load that uses it
        self._c, self.c_info = _crun.prepare(prog["graph"], ctx)

    def _compile_graph(self, prog, where, ctx):
        specs = prog.get("input_specs")
        if not isinstance(specs, list):
            raise ValueError(f"{where}: 'input_specs' must be a list")
        graph = Graph(prog.get("graph"), where, ctx)
        if graph.missing:
            raise RuntimeError(f"{self._label}: the lite runtime has no kernel for operator(s) "
                               f"{sorted(set(graph.missing))} (not in the primitive set it "
                               f"runs: random draws and ops whose output shape depends on the "
                               f"values stay whole; a model exported in training mode keeps "
                               f"its dropout, so call .eval() before ember.export.export)")
        self._graph = graph
        placeholders = graph.placeholders
        # inputs the program baked in as constants have no placeholder
        specs = [sp for sp in specs if not (isinstance(sp, dict) and "constant" in
                                            (sp.get("arg") or {}))]
        if len(specs) != len(placeholders):
            raise ValueError(f"{where}: {len(specs)} input specs for {len(placeholders)} "
                             f"placeholders")
        self._inputs = []   # (placeholder name, weight key or None, meta)
        for (name, meta), sp in zip(placeholders, specs):
            kind = sp.get("kind") if isinstance(sp, dict) else None
            if kind == "USER_INPUT":
                self._inputs.append((name, None, meta))
            elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
                if sp.get("target") not in self._weights:
                    raise ValueError(f"{where}: input {name} reads weight "
                                     f"{sp.get('target')!r}, which the file does not hold")
                self._inputs.append((name, sp["target"], meta))
            else:
                raise ValueError(f"{where}: unsupported input kind {kind!r}")
        ospecs = prog.get("output_specs")
        if not isinstance(ospecs, list) or not all(isinstance(o, dict) for o in ospecs):
            raise ValueError(f"{where}: output_specs must be a list of objects")
        self._outputs = []  # (graph output index or a constant array, kind, buffer target)
        n_graph = 0
        for sp in ospecs:
            arg = sp.get("arg") or {}
            if "constant" in arg:  # a Python value the program returned as it was
                value = np.asarray(decode(arg["constant"], graph.names, where))
                self._outputs.append((value, sp.get("kind"), None))
                continue
            if n_graph >= len(graph.outputs):
                raise ValueError(f"{where}: more output specs than graph outputs")
            self._outputs.append((n_graph, sp.get("kind"), sp.get("target")))
            n_graph += 1

    def __repr__(self):
        ins = ", ".join(f"{n}: {d}{list(s) if s is not None else ''}"
                        for n, s, d in self.input_specs)
        return (f"ember_lite.Program({self._label}: ({ins}) -> {len(self.output_names)} "
                f"output(s), {len(self._graph.steps)} nodes, {len(self._weights)} weights)")

    # ---- introspection ------------------------------------------------------------------
    @property
    def input_specs(self):
        """``[(name, shape, dtype name)]`` of the user inputs; a dynamic size is its
        symbol's expression (a string)."""
        return [(name, tuple(meta["shape"]) if meta else None, meta["dtype"] if meta else None)
                for name, key, meta in self._inputs if key is None]

    @property
    def backend(self):
        """``"c"`` (one generated C function runs the graph) or ``"numpy"``."""
        return "c" if self._c is not None else "numpy"

    @property
    def uses_c_kernels(self):
        return self._c is not None

    @property
    def output_names(self):
        """The graph names of the user outputs (None for a constant output)."""
        names = []
        for o, kind, _ in self._outputs:
            if kind == "USER_OUTPUT":
                ref = self._graph.outputs[o] if isinstance(o, int) else None
                names.append(ref.name if isinstance(ref, Ref) else None)
        return names

    # ---- running -------------------------------------------------------------------------
    def _bind(self, arrays):
        users = [(name, meta) for name, key, meta in self._inputs if key is None]
        if len(arrays) != len(users):
            raise TypeError(f"the program takes {len(users)} input(s) "
                            f"({', '.join(n for n, _ in users)}), got {len(arrays)}")
        syms, env = {}, {}
        for (name, meta), a in zip(users, arrays):
            a = np.asarray(a)
            if meta is not None:
                shape = meta["shape"]
                dt = np_dtype(meta["dtype"], name)
                if a.dtype != dt:
                    raise TypeError(f"input {name}: expected dtype {dt.name}, got {a.dtype.name}")
                if a.ndim != len(shape):
                    raise ValueError(f"input {name}: expected {len(shape)} dims "
                                     f"{list(shape)}, got shape {list(a.shape)}")
                for d, (want, got) in enumerate(zip(shape, a.shape)):
                    if isinstance(want, str) and want.isidentifier():
                        if syms.setdefault(want, got) != got:
                            raise ValueError(f"input {name}: dim {d} is {want} = {syms[want]} "
                                             f"elsewhere, got {got}")
                    elif type(want) is int and want != got:
                        raise ValueError(f"input {name}: dim {d} must be {want}, got {got}")
            env[name] = a
        for s, v in syms.items():
            lo, hi = self._symbols.get(s, (0, None))
            if v < lo or (hi is not None and v > hi):
                raise ValueError(f"size {s} = {v} is outside its range [{lo}, {hi}]")
        for (name, meta), a in zip(users, arrays):  # derived sizes ("2*s0") are checked too
            for d, (want, got) in enumerate(zip(meta["shape"] if meta else (), env[name].shape)):
                if isinstance(want, str) and not want.isidentifier() and \
                        eval_size(want, syms) != got:
                    raise ValueError(f"input {name}: dim {d} must be {want}, got {got}")
        return env, syms

    def __call__(self, *arrays):
        env, syms = self._bind(arrays)
        user_arrays = dict(env)
        for name, key, meta in self._inputs:
            if key is not None:
                env[name] = self._weights[key]
        outs = self._c(env, syms) if self._c is not None else None
        if outs is None:   # NumPy, or sizes the C entry's checks refused (NumPy says why)
            outs = self._graph.run(env, syms)
        results = []
        for o, kind, target in self._outputs:
            v = outs[o] if isinstance(o, int) else o
            if kind == "BUFFER_MUTATION":
                self._weights[target] = np.array(v)
            elif kind == "USER_INPUT_MUTATION":  # written into the caller's array, as torch
                np.copyto(user_arrays[target], v)
            elif kind == "USER_OUTPUT":
                results.append(v)
        return tuple(results)


def load(f, *, c_kernels=True):
    """Load the program file ``f`` (a path, ``os.PathLike`` or binary file object) saved by
    ``ember.export.save``: the graph of ``lite/program.json`` and its weights.

    ``c_kernels`` (beyond torch, which has no such runtime): generate C from the graph and
    run the program through it when a C compiler is available and the graph is in the
    generator's subset (``program.backend`` says which ran; ``EMBER_LITE_C=0`` turns it
    off for the process); False keeps the NumPy kernels.  Either way the outputs are the
    same (to float rounding)."""
    ar, prog = open_program(f)
    try:
        return Program(prog, ar, c_kernels)
    except (TypeError, AttributeError, KeyError, IndexError, RecursionError) as e:
        # a structure the checks did not foresee (a list where an object belongs, ...)
        raise ValueError(f"{ar.label}: malformed lite program ({type(e).__name__}: "
                         f"{e})") from None
