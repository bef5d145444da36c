"""The replay fast path: later calls run the compiled graph without running the Python.

Running the user's Python on every call keeps eager meaning, but costs the recording of
every op.  Dynamo never re-runs the Python it captured; ember may skip it too when that
is provably the same thing, that is, when the Python that ran during capture has no side
effects and everything it read is guarded:

* **The proof** is a conservative scan of what ran, collected with ``sys.setprofile``
  during a capturing call: every Python function that ran is ember's own (with the
  standard-library code ember's code calls) or user code whose bytecode stores nothing
  outside its locals (no global, nonlocal, attribute or item stores, no deletes, no
  imports, no raise), and every C function user code called is on a list of pure
  builtins.  The call ran exactly one graph, at the return, with no graph break.  Anything
  in doubt (a print, a list append, a random op, a global that holds a mutable object)
  leaves the function on the normal path.
* **The guards** cover what the Python read: every argument (tensors by type, shape,
  dtype, requires_grad; numbers and strings by value; modules and optimizers, and
  anything else, by identity), the globals and closure cells the scanned code loads (by
  identity), a `Fingerprint` of the modules and optimizers involved (training flags,
  attributes, parameters, buffers, submodules, param group settings, optimizer state
  tensors and counters, hooks), whether each leaf's ``.grad`` is None, grad mode, the
  default dtype and device, and that no dispatch mode is active.  Shapes are guarded
  exactly: a call with other sizes runs the Python (and may make a new plan).
* **Training steps.**  ember's own code (an optimizer's step, ``zero_grad``) changes
  Python state the scan does not see, so a plan is made only from a call that left every
  module and optimizer fingerprint as it found it (a first optimizer step creates its
  state: the second call makes the plan), and what the call did to ``.grad`` is redone:
  set to the graph's output, to None, or left (an accumulated ``.grad`` is a graph input
  written in place).  Optimizer settings the graph takes as inputs (an lr once it
  varies) are read from their param group on every replay.

A replayed call gathers the graph's inputs from where they came (argument positions,
module parameters, optimizer state, ``.grad``, globals), runs the compiled graph, writes
back tensors written in place, sets ``.grad``, and rebuilds the return value (graph
outputs, views of them made again, arguments passed through, constants).
"""
import builtins
import dis
import math
import operator
import os
import sys
import types

import numpy as np

from .._core import dtype as _dt
from .._core.state import STATE
from .._core.tensor import Tensor, _version_of
from .._core.device import _DEVICE_STACK, DEFAULT_DEVICE
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from .materialize import run_entry
from .replay_state import (Fingerprint, _flat_args, _leaf_candidates, _optimizer_params,
                           _roots_of, _settings_read, snapshot)
from .step_backward import mark_consumed

__all__ = ["Recorder", "ReplayPlan", "MISS"]

MISS = object()
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep

_IMPURE_OPS = frozenset((
    "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF", "STORE_ATTR",
    "DELETE_ATTR", "STORE_SUBSCR", "DELETE_SUBSCR", "STORE_SLICE", "DELETE_SLICE",
    "IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR", "STORE_NAME", "DELETE_NAME",
    "RAISE_VARARGS", "RERAISE", "PRINT_EXPR", "SETUP_ANNOTATIONS", "LOAD_CLASSDEREF",
    "LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"))

_PURE_BUILTINS = frozenset(
    getattr(builtins, n) for n in ("len", "range", "isinstance", "issubclass", "min", "max", "abs", "int", "float",
              "bool", "tuple", "list", "dict", "zip", "enumerate", "reversed", "sorted",
              "sum", "any", "all", "iter", "next", "round", "divmod", "pow", "hash", "str",
              "repr", "slice", "callable", "type", "hasattr", "getattr", "map", "filter",
              "frozenset", "set", "complex", "id"))
_PURE_MODULE_FUNCS = (math, operator)
# methods of builtin containers that only read
_PURE_METHODS = frozenset(("get", "items", "keys", "values", "index", "count", "copy",
                           "startswith", "endswith", "format", "join", "split", "__getitem__",
                           "__contains__", "__len__", "__iter__", "__next__"))


def _lib_dirs():
    dirs = [_EMBER_DIR, "<frozen importlib", "<ember "]  # "<ember graph ...>": generated
    for name in ("numpy", "scipy", "ml_dtypes"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            dirs.append(os.path.dirname(mod.__file__) + os.sep)
    return tuple(dirs)


_LIB_DIRS = _lib_dirs()


def _is_ember_code(code):
    # ember's own code, the array libraries it calls, and the import machinery an ember
    # function runs (``from . import``): what they change, ember's ops see
    return code.co_filename.startswith(_LIB_DIRS)


# standard-library modules whose code ember's code runs as part of its own work
# (``isinstance`` through ``abc``, ``os.environ``, context managers, weak references); a
# user's callable handed to ember (a hook) is never one of these, so it is still scanned
_ENGINE_STDLIB = frozenset(("abc", "os", "_collections_abc", "enum", "typing", "functools",
                            "contextlib", "weakref", "_weakrefset", "threading", "posixpath",
                            "genericpath", "types", "copyreg"))


def _stdlib_module(filename):
    if filename.startswith("<frozen "):
        return filename[8:-1]
    if filename.startswith(_STDLIB_DIR):
        name = filename[len(_STDLIB_DIR):]
        return name[:-3] if name.endswith(".py") and os.sep not in name else None
    return None


def _run_by_ember(frame):
    """Whether ``frame`` runs standard-library code (of `_ENGINE_STDLIB`) that ember's
    code called: what it changes is ember's, as ember's own code."""
    f = frame
    while f is not None:
        if _stdlib_module(f.f_code.co_filename) not in _ENGINE_STDLIB:
            return f is not frame and _is_ember_code(f.f_code)
        f = f.f_back
    return False


def _scan(code, seen):
    """(pure, globals loaded, free variables loaded) of ``code`` and its nested code."""
    if code in seen:
        return True, set(), set()
    seen.add(code)
    names, frees = set(), set()
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in _IMPURE_OPS:
            if op in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in code.co_cellvars:
                continue  # a cell of this very frame (a local an inner genexpr reads)
            return False, names, frees
        if op in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(ins.argval)
        elif op == "LOAD_DEREF" and ins.argval in code.co_freevars:
            frees.add(ins.argval)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            ok, n, f = _scan(c, seen)
            if not ok:
                return False, names, frees
            names |= n
    return True, names, frees


def _method_closure(frame, code):
    """The closure cells of the method running ``code`` (a class defined inside a function,
    as modules built by a factory are), found on its first argument's class; or None."""
    if not code.co_argcount:
        return None
    owner = frame.f_locals.get(code.co_varnames[0])
    for klass in type(owner).__mro__:
        for value in vars(klass).values():
            fn = getattr(value, "__func__", value)
            if getattr(fn, "__code__", None) is code:
                return fn.__closure__
    return None


class Recorder:
    """Collects what runs during one capturing call (``sys.setprofile``)."""

    def __init__(self):
        self.user_frames = {}       # code of each user function that ran -> its globals
        self.closures = {}          # code with free variables -> its function's cells
        self.impure = None          # the first reason the call is not pure
        self.prev = None

    def _profile(self, frame, event, arg):
        if self.impure is not None:
            return
        if event == "call":
            code = frame.f_code
            if code not in self.user_frames and not _is_ember_code(code) and \
                    not _run_by_ember(frame):
                # the globals only: holding the frame would keep its locals (lazy tensors
                # the graph would then have to produce) alive
                self.user_frames[code] = frame.f_globals
                if code.co_freevars:
                    cells = _method_closure(frame, code)
                    if cells is not None:
                        self.closures[code] = cells
        elif event == "c_call":
            caller = frame.f_code
            if _is_ember_code(caller) or _run_by_ember(frame):
                return
            if arg in _PURE_BUILTINS:
                return
            mod = getattr(arg, "__module__", None)
            if mod in ("math", "operator", "_operator"):
                return
            self_obj = getattr(arg, "__self__", None)
            if getattr(arg, "__name__", None) in _PURE_METHODS and \
                    isinstance(self_obj, (tuple, list, dict, str, frozenset, Module)):
                return
            if isinstance(self_obj, types.ModuleType) and \
                    getattr(self_obj, "__name__", "").startswith("ember"):
                return
            self.impure = f"calls {getattr(arg, '__qualname__', arg)!r}"

    def __enter__(self):
        self.prev = sys.getprofile()
        if self.prev is not None:
            self.impure = "another profiler is active"
            return self
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc):
        if self.prev is None:
            sys.setprofile(None)
        if exc[0] is not None:
            self.impure = "the call raised"


def _guard_global(value):
    """Whether a loaded global or closure value may be guarded by identity alone (modules
    and optimizers: their state is guarded too)."""
    return value is None or isinstance(value, (types.ModuleType, types.FunctionType,
                                               types.BuiltinFunctionType, type, int, float,
                                               bool, str, bytes, complex, Tensor,
                                               types.MethodType, _dt.dtype, Module,
                                               Optimizer)) \
        or callable(value) and type(value).__module__.startswith("ember")


def _state_guard():
    return (STATE.grad_enabled, STATE.inference, _dt.get_default_dtype(), DEFAULT_DEVICE[0],
            _DEVICE_STACK and _DEVICE_STACK[-1])


def _arg_guard(a):
    if isinstance(a, Tensor):
        d = a.__dict__.get("_data")
        if type(d) is not np.ndarray or "_lazy" in a.__dict__:
            return None
        return ("T", type(a), d.shape, d.dtype, a._requires_grad)
    t = type(a)
    if t in (int, float, bool, str, complex) or a is None:
        return ("V", t, a)
    if t in (tuple, list):
        inner = tuple(_arg_guard(x) for x in a)
        return None if None in inner else ("S", t, inner)
    if t is dict:
        inner = tuple((k, _arg_guard(v)) for k, v in a.items())
        return None if any(g is None for _, g in inner) else ("D", inner)
    if isinstance(a, (Module, Optimizer, types.FunctionType, types.BuiltinFunctionType,
                      type, _dt.dtype)) or a is Ellipsis:
        return ("I", id(a))  # modules and optimizers: their state is guarded separately
    return None  # an object whose attributes the Python may read: not replayable


def _alias_pattern(args, kwargs):
    """Which tensor arguments are one object, and which share memory: the graph was made
    for exactly this aliasing (an in-place write through one must show through the other)."""
    seen = {}
    out = []
    arrays = []
    for x in _flat_args(args, kwargs):
        if isinstance(x, Tensor):
            out.append(seen.setdefault(id(x), len(seen)))
            arrays.append(x.__dict__.get("_data"))
    if len(arrays) > 1:
        bases = [a if getattr(a, "base", None) is None else a.base for a in arrays]
        if len(set(map(id, bases))) != len(set(map(id, arrays))):
            # by identity: list.index would compare arrays with ==, elementwise
            ids = [id(b) for b in bases]
            out.append(tuple(ids.index(i) for i in ids))
    return tuple(out)


def _tensor_paths(args, kwargs):
    """id(tensor) -> how to fetch it from (args, kwargs)."""
    out = {}

    def walk(x, path):
        if isinstance(x, Tensor):
            out.setdefault(id(x), path)
        elif type(x) in (tuple, list):
            for i, y in enumerate(x):
                walk(y, path + (i,))
        elif type(x) is dict:
            for k, y in x.items():
                walk(y, path + (k,))
    for i, a in enumerate(args):
        walk(a, ("a", i))
    for k, v in kwargs.items():
        walk(v, ("k", k))
    return out


def _fetch(args, kwargs, path):
    x = args[path[1]] if path[0] == "a" else kwargs[path[1]]
    for p in path[2:]:
        x = x[p]
    return x


class ReplayPlan:
    """See the module docstring."""

    def __init__(self, entry, guards, roots, roots_state, global_guards, sources,
                 extra_inputs, writes, template, n_args, kw_names, grads, consumed,
                 settings=(), loose=frozenset()):
        self.entry = entry
        self.guards = guards
        self.roots = roots                # modules and optimizers whose state is guarded
        self.roots_state = roots_state
        self.global_guards = global_guards
        self.sources = sources
        self.extra_inputs = extra_inputs
        self.writes = writes
        self.template = template
        self.n_args = n_args
        self.kw_names = kw_names
        self.grad_guards, self.grad_sets = grads
        self.consumed = consumed          # outputs whose recorded backward ran
        self.settings = settings          # (extra input, param group, key) read per call
        self.loose = loose
        self.hits = 0
        # a graph input held by a module or optimizer keeps its array (writes copy into
        # it): another array (``p.data = ...``) may have another shape
        self.obj_arrays = [(src[1], src[1].__dict__.get("_data")) for src in sources
                           if src[0] == "obj"]
        self.arg_positions = [src[1][1] for src in sources
                              if src[0] == "arg" and len(src[1]) == 2 and src[1][0] == "a"]
        if len(self.arg_positions) != len(sources):
            self.arg_positions = None
        self.tensor_args, self.other_args = [], []
        for i, g in enumerate(guards[1]):
            if g[0] == "T":
                self.tensor_args.append((i,) + g[1:])
            else:
                self.other_args.append((i, g))
        # aliasing can only differ between calls with two or more tensor arguments
        self.check_aliasing = sum(g is not None and g[0] == "T" for g in guards[1]) + \
            sum(g is not None and g[0] == "T" for g in guards[2]) > 1 or any(
                g is not None and g[0] in ("S", "D") for g in guards[1] + guards[2])

    def run(self, args, kwargs):
        if STATE.modes or len(args) != self.n_args or \
                (kwargs or self.kw_names) and tuple(kwargs) != self.kw_names:
            return MISS
        if _state_guard() != self.guards[0]:
            return MISS
        for i, cls, shape, dtype, rg in self.tensor_args:  # the common case, inlined
            a = args[i]
            if type(a) is not cls:
                return MISS
            d = a.__dict__
            arr = d.get("_data")
            if type(arr) is not np.ndarray or arr.shape != shape or arr.dtype != dtype or \
                    a._requires_grad != rg or "_lazy" in d:
                return MISS
        for i, g in self.other_args:
            if _arg_guard(args[i]) != g:
                return MISS
        if kwargs:
            for k, g in zip(kwargs.values(), self.guards[2]):
                if _arg_guard(k) != g:
                    return MISS
        if self.check_aliasing and _alias_pattern(args, kwargs) != self.guards[3]:
            return MISS
        for holder, name, ident in self.global_guards:
            v = holder.get(name, _ABSENT) if type(holder) is dict else \
                (holder.cell_contents if name is None else _ABSENT)
            if v is not ident:
                return MISS
        if self.roots_state is not None and not self.roots_state.holds():
            return MISS
        for src, none in self.grad_guards:
            if (_source(src, args, kwargs).__dict__.get("_grad") is None) is not none:
                return MISS
        for t, arr in self.obj_arrays:  # module and optimizer tensors: the same storage
            if t.__dict__.get("_data") is not arr:
                return MISS
        if self.arg_positions is not None:  # every input a positional argument
            inputs = [args[i] for i in self.arg_positions]
        else:
            inputs = [_source(src, args, kwargs) for src in self.sources]
        if self.settings:  # numbers the graph takes as inputs, read where they live
            extra = list(self.extra_inputs)
            for pos, group, key in self.settings:
                extra[pos] = group[key]
            inputs.extend(extra)
        else:
            inputs.extend(self.extra_inputs)
        outs = run_entry(self.entry, inputs)
        for input_pos, out_pos in self.writes:
            t = inputs[input_pos]
            r = outs[out_pos]
            np.copyto(t._data, r._data, casting="unsafe")
            _version_of(t)[0] += 1
        for src, pos in self.grad_sets:  # .grad as the Python left it (zero_grad, backward)
            _source(src, args, kwargs)._grad = None if pos is None else outs[pos]
        for pos in self.consumed:
            mark_consumed(outs[pos])
        self.hits += 1
        tpl = self.template
        return outs[tpl[1]] if tpl[0] == "out" else _build(tpl, outs, args, kwargs)


def _source(src, args, kwargs):
    """The tensor ``src`` names: an argument (by path), a fixed object (module or
    optimizer state), or the current ``.grad`` of one of those."""
    kind, x = src
    if kind == "obj":
        return x
    if kind == "arg":
        return _fetch(args, kwargs, x)
    return _source(x, args, kwargs)._grad


_ABSENT = object()


def _build(tpl, outs, args, kwargs):
    kind = tpl[0]
    if kind == "out":
        return outs[tpl[1]]
    if kind == "const":
        return tpl[1]
    if kind == "arg":
        return _fetch(args, kwargs, tpl[1])
    if kind == "view":
        v = _build(tpl[1], outs, args, kwargs)
        prev = STATE.grad_enabled
        STATE.grad_enabled = tpl[3]
        try:
            for op, params in tpl[2]:
                v = op(v, **params)
        finally:
            STATE.grad_enabled = prev
        return v
    if kind == "seq":
        items = [_build(t, outs, args, kwargs) for t in tpl[2]]
        return tpl[1](items) if tpl[1] is not tuple else tuple(items)
    if kind == "dict":
        return {k: _build(t, outs, args, kwargs) for k, t in tpl[1]}
    raise AssertionError(kind)


def make_plan(compiled, recorder, session, args, kwargs, result, before):
    """A ReplayPlan for the call just made, or None (with the reason in ``why``);
    ``before``: the `snapshot` taken before the call."""
    if recorder.impure is not None:
        return None, recorder.impure
    if session.effects:
        return None, session.effects[0]
    fl = session.flushes
    if session.breaks or len(fl) != 1:
        return None, "the call ran several graphs or had a graph break"
    info = fl[0]
    if info.entry is None or session.trace is not None:
        return None, "the graph was not cached"
    # the scan of every user function that ran
    global_guards = []
    seen = set()
    for code, frame_globals in recorder.user_frames.items():
        ok, names, frees = _scan(code, seen)
        if not ok:
            return None, f"{code.co_name} ({code.co_filename}:{code.co_firstlineno}) " \
                         f"writes outside its locals"
        g = frame_globals
        for n in names:
            if n in g:
                v = g[n]
                if not _guard_global(v):
                    return None, f"global {n!r} holds a {type(v).__name__}"
                global_guards.append((g, n, v))
        closure = code.co_freevars
        fn = getattr(compiled.fn, "__func__", compiled.fn)
        func_closure = fn.__closure__ if getattr(fn, "__code__", None) is code else \
            recorder.closures.get(code)
        if frees and func_closure is None:
            return None, "a closure that cannot be guarded"
        for name, cell in zip(closure, func_closure or ()):
            if name in frees:
                try:
                    v = cell.cell_contents
                except ValueError:
                    return None, "an empty closure cell"
                if not _guard_global(v):
                    return None, f"closure variable {name!r} holds a {type(v).__name__}"
                global_guards.append((cell, None, v))
    guards = (_state_guard(), tuple(_arg_guard(a) for a in args),
              tuple(_arg_guard(v) for v in kwargs.values()), _alias_pattern(args, kwargs))
    if any(g is None for g in guards[1]) or any(g is None for g in guards[2]):
        return None, "an argument that cannot be guarded"
    paths = _tensor_paths(args, kwargs)
    mods, opts = _roots_of(compiled, args, kwargs,
                           global_values=[v for _, _, v in global_guards])
    state_before, grads_before = before
    for r in mods + opts:
        was = state_before.get(id(r))
        if was is None or not Fingerprint([r]).same(was):
            return None, f"the call changed the state of a {type(r).__name__}"
    owned = {}
    for m in mods:
        for t in list(m.parameters()) + list(m.buffers()):
            owned[id(t)] = t
    for o in opts:
        for p in _optimizer_params([o]):
            owned[id(p)] = p
        for st in o.state.values():
            for v in st.values():
                if isinstance(v, Tensor):
                    owned[id(v)] = v
    for holder, name, v in global_guards:
        if isinstance(v, Tensor):
            owned[id(v)] = v

    def source_of(t):
        p = paths.get(id(t))
        if p is not None:
            return ("arg", p)
        return ("obj", t) if id(t) in owned else None

    # .grad of the leaves: guarded as None or not before; set as the call left it
    grad_guards, grad_sets, grad_of = [], [], {}
    done = set()
    for t in _leaf_candidates(mods, opts, args, kwargs):
        if id(t) in done:
            continue
        done.add(id(t))
        src = source_of(t)
        was = grads_before.get(id(t), _ABSENT)
        if src is None or was is _ABSENT:
            return None, "a leaf whose .grad cannot be followed"
        grad_guards.append((src, was is None))
        g = t.__dict__.get("_grad")
        if g is None:
            if was is not None:
                grad_sets.append((src, None))
        elif g is was:
            grad_of[id(g)] = ("grad", src)  # the same tensor (perhaps written in place)
        else:
            how = info.settled.get(id(g))
            if how is None or how[0] != "out" or how[1] is None:
                return None, "a .grad was set to a tensor the graph did not make"
            grad_sets.append((src, how[1]))
    sources = []
    for t in info.inputs:
        src = source_of(t) or grad_of.get(id(t))
        if src is None:
            return None, "a graph input that is neither an argument nor module or " \
                         "optimizer state"
        sources.append(src)
    writes = []
    for t, out_pos in info.writes:
        try:
            writes.append((next(i for i, x in enumerate(info.inputs) if x is t), out_pos))
        except StopIteration:
            return None, "a tensor written in place that the graph does not read"
    template = _template(result, info.settled, paths, 0)
    if template is None:
        return None, "the return value cannot be rebuilt"
    roots = mods + opts or None
    settings = _settings_read(opts, info.extra_inputs)
    loose = frozenset((id(g), k) for _, g, k in settings)
    plan = ReplayPlan(info.entry, guards, roots, Fingerprint(roots, loose) if roots else None,
                      global_guards, sources, info.extra_inputs, writes, template,
                      len(args), tuple(kwargs), (grad_guards, grad_sets),
                      tuple(sorted(info.consumed)), settings, loose)
    return plan, None


def _template(x, settled, paths, depth):
    if depth > 4:
        return None
    if isinstance(x, Tensor):
        how = settled.get(id(x))
        if how is not None:
            if how[0] == "out":
                return ("out", how[1])
            if how[0] == "view":
                root = how[1]
                rt = settled.get(id(root))
                if rt is not None and rt[0] == "out":
                    return ("view", ("out", rt[1]), how[2], how[3])
                p = paths.get(id(root))
                if p is not None:
                    return ("view", ("arg", p), how[2], how[3])
                return None
            return None
        p = paths.get(id(x))
        return ("arg", p) if p is not None else None
    t = type(x)
    if x is None or t in (int, float, bool, str, complex):
        return ("const", x)
    if t in (tuple, list):
        items = [_template(y, settled, paths, depth + 1) for y in x]
        return None if None in items else ("seq", t, items)
    if t is dict:
        items = [(k, _template(v, settled, paths, depth + 1)) for k, v in x.items()]
        return None if any(v is None for _, v in items) else ("dict", items)
    return None
