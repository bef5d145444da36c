"""`Program`: a loaded lite program, run node by node with the NumPy kernels."""
import numpy as np

from ._format import eval_size, np_dtype, open_program, read_array
from .kernels import KERNELS

__all__ = ["Program", "load"]


class _Ref:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _Sym:
    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


def _decode(v, names, where, arrays=None):
    """A node argument (the tagged JSON of the format) with node references as `_Ref` and
    symbolic sizes as `_Sym`, resolved per call."""
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, list):
        return [_decode(x, names, where, arrays) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise ValueError(f"{where}: malformed argument {v!r:.100}")
    (tag, body), = v.items()
    if tag == "node":
        if body not in names:
            raise ValueError(f"{where}: reference to undefined node {body!r}")
        return _Ref(body)
    if tag == "float" and body in ("inf", "-inf", "nan"):
        return float(body)
    if tag == "complex" and isinstance(body, list) and len(body) == 2:
        return complex(*(_decode(x, names, where, arrays) for x in body))
    if tag == "tuple" and isinstance(body, list):
        return tuple(_decode(x, names, where, arrays) for x in body)
    if tag in ("dtype", "np_dtype"):
        return np_dtype(body, where)
    if tag == "sym":
        try:
            eval_size(body, _Anything())  # validates the syntax now
        except ZeroDivisionError:
            pass
        return _Sym(body)
    if tag == "slice" and isinstance(body, list) and len(body) == 3:
        return slice(*(_decode(x, names, where, arrays) for x in body))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "array" and arrays is not None:  # an index table a decomposition made
        return arrays(body)
    if tag == "device" and isinstance(body, str):  # NumPy has one device: the host
        return body
    raise ValueError(f"{where}: unknown argument tag {tag!r}")


class _Anything(dict):
    def __contains__(self, k):
        return True

    def __getitem__(self, k):
        return 1


def _has_dynamic(v):
    if isinstance(v, (_Ref, _Sym)):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_dynamic(x) for x in v)
    if isinstance(v, dict):
        return any(_has_dynamic(x) for x in v.values())
    if isinstance(v, slice):
        return any(_has_dynamic(x) for x in (v.start, v.stop, v.step))
    return False


def _resolver(v):
    """``f(env, syms)`` giving ``v`` with node references and sizes resolved, built once
    so that a call pays no type dispatch over constant arguments."""
    if not _has_dynamic(v):
        return lambda env, syms: v
    if type(v) is _Ref:
        name = v.name
        return lambda env, syms: env[name]
    if type(v) is _Sym:
        expr = v.expr
        return lambda env, syms: eval_size(expr, syms)
    if isinstance(v, (tuple, list)):
        fs = [_resolver(x) for x in v]
        kind = type(v)
        return lambda env, syms: kind([f(env, syms) for f in fs])
    if isinstance(v, dict):
        fs = {k: _resolver(x) for k, x in v.items()}
        return lambda env, syms: {k: f(env, syms) for k, f in fs.items()}
    fs = [_resolver(x) for x in (v.start, v.stop, v.step)]  # a slice
    return lambda env, syms: slice(*(f(env, syms) for f in fs))


def _resolve(v, env, syms):
    return _resolver(v)(env, syms)


def _meta_dtypes(meta, where):
    if meta is None:
        return None
    if isinstance(meta, list):
        return tuple(_meta_dtypes(m, where) for m in meta)
    return np_dtype(meta.get("dtype"), where)


def _cast(out, dt):
    """The kernel's result in the dtype the graph recorded (torch's result dtype)."""
    if dt is None:
        return out
    if isinstance(dt, tuple):
        return tuple(_cast(o, d) for o, d in zip(out, dt))
    if isinstance(out, list):  # data-dependent number of outputs
        return out
    out = np.asarray(out)
    return out if out.dtype == dt else out.astype(dt)


class Program:
    """A program loaded from an ember program file.  Call it with the user's inputs
    (NumPy arrays, or anything `numpy.asarray` accepts) in the order the exported function
    took them; weights come from the file.  Returns a tuple of NumPy arrays, the user
    outputs.  Buffers the program writes (BatchNorm's running statistics in training mode)
    keep their new values for the next call, as in the exported module, and a user input the
    program writes in place is written into the array passed (which must be a writable
    NumPy array of the input's dtype)."""

    def __init__(self, prog, ar):
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
            if not (isinstance(name, str) and name.isidentifier() and isinstance(e, dict)):
                raise ValueError(f"{where}: malformed symbol {name!r}")
            self._symbols[name] = (e.get("min") or 0, e.get("max"))
        self._compile_graph(prog, where, lambda e: read_array(e, ar, f"{where}: array"))

    def _compile_graph(self, prog, where, arrays):
        nodes = prog.get("graph")
        specs = prog.get("input_specs")
        if not isinstance(nodes, list) or not isinstance(specs, list):
            raise ValueError(f"{where}: 'graph' and 'input_specs' must be lists")
        names, steps, placeholders, output = set(), [], [], None
        missing = []
        for i, n in enumerate(nodes):
            at = f"{where}, node {i}"
            if not isinstance(n, dict) or not isinstance(n.get("name"), str):
                raise ValueError(f"{at}: malformed node")
            kind, name = n.get("op"), n["name"]
            if kind == "placeholder":
                placeholders.append((name, n.get("meta")))
            elif kind == "call_function":
                t = n.get("target")
                args = [_decode(a, names, at, arrays) for a in n.get("args", [])]
                kwargs = {k: _decode(v, names, at, arrays) for k, v in
                          n.get("kwargs", {}).items()}
                dts = _meta_dtypes(n.get("meta"), at)
                if t == "getitem":
                    fn = None
                elif t == "set_grad_enabled":
                    fn = "skip"
                elif t in KERNELS:
                    fn = KERNELS[t]
                else:
                    missing.append(str(t))
                    fn = None
                steps.append((name, t, fn, _resolver(args), _resolver(kwargs), dts))
            elif kind == "output":
                output = [_decode(a, names, at) for a in n.get("args", [])]
            else:
                raise ValueError(f"{at}: unknown node kind {kind!r}")
            names.add(name)
        if missing:
            raise RuntimeError(f"{self._label}: the lite runtime has no kernel for operator(s) "
                               f"{sorted(set(missing))} (not in the primitive set it runs: "
                               f"random draws and ops whose output shape depends on the values "
                               f"stay whole; a model exported in training mode keeps its "
                               f"dropout, so call .eval() before ember.export.export)")
        if output is None or len(output) != 1:
            raise ValueError(f"{where}: the graph has no output node")
        # inputs the program baked in as constants have no placeholder
        specs = [sp for sp in specs if not (isinstance(sp, dict) and "constant" in
                                            (sp.get("arg") or {}))]
        if len(specs) != len(placeholders):
            raise ValueError(f"{where}: {len(specs)} input specs for {len(placeholders)} "
                             f"placeholders")
        self._steps = steps
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
        outs = list(output[0]) if isinstance(output[0], (tuple, list)) else [output[0]]
        ospecs = prog.get("output_specs")
        if not isinstance(ospecs, list) or not all(isinstance(o, dict) for o in ospecs):
            raise ValueError(f"{where}: output_specs must be a list of objects")
        self._outputs = []  # (value: a _Ref, or a constant; kind; buffer target)
        it = iter(outs)
        for sp in ospecs:
            arg = sp.get("arg") or {}
            if "constant" in arg:  # a Python value the program returned as it was
                self._outputs.append((np.asarray(_decode(arg["constant"], names, where)),
                                      sp.get("kind"), None))
                continue
            try:
                self._outputs.append((next(it), sp.get("kind"), sp.get("target")))
            except StopIteration:
                raise ValueError(f"{where}: more output specs than graph outputs") from None

    # ---- introspection ------------------------------------------------------------------
    @property
    def input_specs(self):
        """``[(name, shape, dtype name)]`` of the user inputs; a dynamic size is its
        symbol's expression (a string)."""
        return [(name, tuple(meta["shape"]) if meta else None, meta["dtype"] if meta else None)
                for name, key, meta in self._inputs if key is None]

    @property
    def output_names(self):
        return [o.name if isinstance(o, _Ref) else None for o, kind, _ in self._outputs
                if kind == "USER_OUTPUT"]

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
        for name, key, meta in self._inputs:
            if key is not None:
                env[name] = self._weights[key]
        for name, target, fn, args_of, kwargs_of, dts in self._steps:
            args = args_of(env, syms)
            kwargs = kwargs_of(env, syms)
            if fn is None:  # getitem
                env[name] = args[0][args[1]]
                continue
            if fn == "skip":
                env[name] = None
                continue
            env[name] = _cast(fn(dts, *args, **kwargs), dts)
        results = []
        for o, kind, target in self._outputs:
            v = _resolve(o, env, syms)
            if kind == "BUFFER_MUTATION":
                self._weights[target] = np.array(v)
            elif kind == "USER_INPUT_MUTATION":  # written into the caller's array, as torch
                np.copyto(env[target], v)
            elif kind == "USER_OUTPUT":
                results.append(v if not isinstance(v, np.ndarray) else v)
        return tuple(results)


def load(f):
    """Load the program file ``f`` (a path, ``os.PathLike`` or binary file object) saved by
    ``ember.export.save``: the graph of ``lite/program.json`` and its weights."""
    ar, prog = open_program(f)
    return Program(prog, ar)
