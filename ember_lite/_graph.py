"""A compiled graph of the lite format: its steps (kernel, argument resolvers, result
dtypes), placeholders and outputs.  The main program is one; each sub-graph of a
higher-order op (``cond``, ``while_loop``, ``map``) is another."""
import numpy as np

from ._control_flow import CONTROL_FLOW
from ._format import eval_size, np_dtype
from ._values import VALUE_STEPS
from .kernels import KERNELS

__all__ = ["Graph", "Ref", "decode"]



class Ref:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _Sym:
    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


def decode(v, names, where, ctx=None):
    """A node argument (the tagged JSON of the format) with node references as `Ref` and
    symbolic sizes as `_Sym`, resolved per call."""
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, list):
        return [decode(x, names, where, ctx) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise ValueError(f"{where}: malformed argument {v!r:.100}")
    (tag, body), = v.items()
    if tag == "node":
        if body not in names:
            raise ValueError(f"{where}: reference to undefined node {body!r}")
        return Ref(body)
    if tag == "float" and body in ("inf", "-inf", "nan"):
        return float(body)
    if tag == "complex" and isinstance(body, list) and len(body) == 2:
        return complex(*(decode(x, names, where, ctx) for x in body))
    if tag == "tuple" and isinstance(body, list):
        return tuple(decode(x, names, where, ctx) for x in body)
    if tag in ("dtype", "np_dtype"):
        return np_dtype(body, where)
    if tag == "sym":
        try:
            eval_size(body, _Anything())  # validates the syntax now
        except ZeroDivisionError:
            pass
        return _Sym(body)
    if tag == "slice" and isinstance(body, list) and len(body) == 3:
        return slice(*(decode(x, names, where, ctx) for x in body))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "array" and ctx is not None:  # an index table a decomposition made
        return ctx.array(body)
    if tag == "subgraph" and ctx is not None:  # a function of a higher-order op
        return ctx.subgraph(body, where)
    if tag == "device" and isinstance(body, str):  # NumPy has one device: the host
        return body
    raise ValueError(f"{where}: unknown argument tag {tag!r}")


class _Anything(dict):
    def __contains__(self, k):
        return True

    def __getitem__(self, k):
        return 1


def _has_dynamic(v):
    if isinstance(v, (Ref, _Sym)):
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
    if type(v) is Ref:
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


def _meta_dtypes(meta, where):
    if meta is None or meta == "int" or (isinstance(meta, dict) and "int" in meta):
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




class _NodeError(RuntimeError):
    """A kernel's failure, with the node it ran for."""


def _check_placeholder_meta(meta, where):
    if meta is None:
        return None
    if isinstance(meta, dict) and set(meta) == {"int"}:
        return meta
    if not (isinstance(meta, dict) and isinstance(meta.get("shape"), list) and
            all(type(s) is int or isinstance(s, str) for s in meta["shape"])):
        raise ValueError(f"{where}: malformed placeholder metadata {meta!r:.100}")
    np_dtype(meta.get("dtype"), where)
    for s in meta["shape"]:
        if isinstance(s, str):
            try:
                eval_size(s, _Anything())
            except ZeroDivisionError:
                pass
    return meta


class Graph:
    """Steps compiled once from the JSON nodes; ``missing`` lists the operators (here and
    in sub-graphs) that have no kernel."""

    def __init__(self, nodes, where, ctx):
        if not isinstance(nodes, list):
            raise ValueError(f"{where}: the graph must be a list of nodes")
        names, self.steps, self.placeholders, output = set(), [], [], None
        self.missing = []
        for i, n in enumerate(nodes):
            at = f"{where}, node {i}"
            if not isinstance(n, dict) or not isinstance(n.get("name"), str):
                raise ValueError(f"{at}: malformed node")
            kind, name = n.get("op"), n["name"]
            if name in names:
                raise ValueError(f"{at}: node name {name!r} is defined twice")
            raw_args, raw_kwargs = n.get("args", []), n.get("kwargs", {})
            if not isinstance(raw_args, list) or not isinstance(raw_kwargs, dict):
                raise ValueError(f"{at}: args must be a list and kwargs an object")
            if kind == "placeholder":
                self.placeholders.append((name, _check_placeholder_meta(n.get("meta"), at)))
            elif kind == "call_function":
                t = n.get("target")
                args = [decode(a, names, at, ctx) for a in raw_args]
                kwargs = {k: decode(v, names, at, ctx) for k, v in raw_kwargs.items()}
                for v in kwargs.values():
                    if isinstance(v, Graph):
                        self.missing += v.missing
                dts = _meta_dtypes(n.get("meta"), at)
                if t == "getitem":
                    fn = None
                elif t == "set_grad_enabled":
                    fn = "skip"
                elif t in KERNELS:
                    fn = KERNELS[t]
                elif t in VALUE_STEPS:
                    fn = VALUE_STEPS[t]
                elif t in CONTROL_FLOW:
                    fn = CONTROL_FLOW[t]
                else:
                    self.missing.append(str(t))
                    fn = None
                meta = n.get("meta")
                binds = meta["int"] if t == "item_at" and isinstance(meta, dict) and \
                    isinstance(meta.get("int"), str) and meta["int"].isidentifier() else None
                self.steps.append((name, t, fn, _resolver(args), _resolver(kwargs), dts,
                                   binds))
            elif kind == "output":
                output = [decode(a, names, at, ctx) for a in raw_args]
            else:
                raise ValueError(f"{at}: unknown node kind {kind!r}")
            names.add(name)
        if output is None or len(output) != 1:
            raise ValueError(f"{where}: the graph has no output node")
        self.names = names
        self.outputs = list(output[0]) if isinstance(output[0], (tuple, list)) else [output[0]]
        self._outs = _resolver(self.outputs)

    def run(self, env, syms):
        """Every step on ``env`` (placeholder name -> array); returns the outputs."""
        for name, target, fn, args_of, kwargs_of, dts, binds in self.steps:
            try:
                args = args_of(env, syms)
                if fn is None:  # getitem
                    env[name] = args[0][args[1]]
                elif fn == "skip":
                    env[name] = None
                else:
                    env[name] = _cast(fn(dts, *args, **kwargs_of(env, syms)), dts)
                if binds is not None:   # a value read from an input: its size symbol
                    syms[binds] = env[name]
            except _NodeError:
                raise
            except Exception as e:  # noqa: BLE001 - named, whatever the kernel raised
                if target == "assert_size" and isinstance(e, RuntimeError):
                    raise   # the program's own check, worded as ember's module raises it
                raise _NodeError(f"node {name} ({target}) failed: {type(e).__name__}: "
                                 f"{e}") from e
        return self._outs(env, syms)

    def __call__(self, *args):
        """A sub-graph's call: tensors, then sizes (which bind their symbols)."""
        if len(args) != len(self.placeholders):
            raise RuntimeError(f"a sub-graph takes {len(self.placeholders)} inputs, got "
                               f"{len(args)}")
        env, syms = {}, {}
        for (name, meta), a in zip(self.placeholders, args):
            if isinstance(meta, dict) and "int" in meta:
                if isinstance(meta["int"], str) and meta["int"].isidentifier():
                    syms[meta["int"]] = int(a)
                env[name] = int(a)
            else:
                env[name] = np.asarray(a)
        return tuple(self.run(env, syms))
