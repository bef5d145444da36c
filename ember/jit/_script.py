"""``jit.script``: compile functions and modules in the TorchScript subset, ember's way.

Design (how it differs from torch, and why)
-------------------------------------------
torch compiles a scripted function into its own IR and interprets that.  ember keeps the
eager meaning instead, as ``ember.compile`` does: **a scripted function runs as the
original Python runs**, so results, errors and side effects are exactly eager's.  What
``script`` adds:

1. The language check: the source is parsed and anything outside the TorchScript subset
   raises `ember.jit.frontend.NotSupportedError` naming ``File "...", line N``
   (`ember.jit.frontend`), and every call checks the argument types from the annotations
   (unannotated parameters are Tensors), raising torch's RuntimeError.
2. The rewrite (`ember.jit._rewrite`): each ``if``/``while`` asks at run time whether its
   condition is a tensor of a capture in progress; only then it runs as ``ember.cond`` /
   ``ember.while_loop``, so data-dependent branches and loops survive into the program.
3. The program: a scripted method's program is captured with ``ember.export.export``, every
   tensor dimension dynamic (``Dim.AUTO``), **when it is first needed** -- ``.graph``,
   ``.code``, ``save`` -- from the inputs of the method's first call (kept, detached).  A
   method that was never called has no example to capture from: its ``.code`` shows the
   scripted source, and reading its ``.graph`` or saving its module raises a RuntimeError
   that says to call it once on an example input (or to use ``jit.trace``).  ``is_scripting()`` is True during that capture.  Python
   values among the arguments (an ``int`` flag) are part of the program with the values of
   that first call: the scripted module itself accepts any value (it runs as Python), a
   loaded program raises a clear error for another value.  ``script(obj, example_inputs=...)`` (torch's
   profile-directed typing) types the unannotated parameters from the first example and
   captures the program from it, with no call needed.

Modules: ``script(module)`` returns a `RecursiveScriptModule` of a class made for the
module's class, sharing its parameters, buffers and attributes.  ``forward`` and methods
marked ``@jit.export`` are compiled (checked, rewritten, with programs); methods they call
on ``self`` are checked and rewritten; ``@jit.ignore`` methods stay plain Python (their
tensor ops still land in the program, as ops of any Python would); ``@jit.unused`` methods
raise when called.  The scripted module's class derives from the module's class, so
inherited methods and ``super()`` work.  Submodules of user classes are scripted
recursively; ember's own modules (``nn.Linear``, containers) run as they are, and scripting
one directly (``jit.script(nn.Sequential(...))``) captures its ``forward`` unchanged.
User functions a scripted function calls by a global name are scripted too (checked,
rewritten), as torch compiles them.
"""
import ast
import inspect

from .._core.tensor import Tensor
from ..nn.modules.module import Module
from . import _runtime
from ._annotations import Attribute, FunctionModifiers, get_modifier
from ._rewrite import RT, assigned_names, rewrite_function
from ._script_module import RecursiveScriptModule, ScriptFunction, ScriptMethod, ScriptModule
from ._state import scripting
from ._types import Signature
from .frontend import NotSupportedError, check_function

__all__ = ["script", "ScriptedMethod", "compile_function"]


_COMPILED = {}  # function -> its rewritten version (a recursive call finds None: Python)


def _callees(fdef, fn, params):
    """The user functions ``fn`` calls by a global name: ``{name: function}``."""
    local = set(params) | set(assigned_names(fdef.body)) | set(fn.__code__.co_freevars)
    out = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            f = fn.__globals__.get(name)
            if name in local or not inspect.isfunction(f) or not _is_user_module(f.__module__):
                continue
            if get_modifier(f) in (FunctionModifiers.IGNORE,):
                continue
            out[name] = f
    return out


def _is_user_module(name):
    return not (name or "").startswith(("ember", "torch", "numpy", "builtins", "typing",
                                        "functools", "math", "operator", "collections"))


def _compiled_callee(f):
    """A user function called from scripted code, scripted too (as torch compiles what a
    scripted function calls): checked and rewritten, or a stub if marked unused."""
    if get_modifier(f) in (FunctionModifiers.UNUSED, FunctionModifiers.IGNORE_DROP):
        return _unused_function(f.__name__)
    if f in _COMPILED:
        return _COMPILED[f] or f
    return compile_function(f)


def compile_function(fn):
    """The rewritten version of ``fn`` (see the module docstring), after the subset check.
    User functions it calls by name are compiled too and bound in place of the globals."""
    if _COMPILED.get(fn) is not None:
        return _COMPILED[fn]
    _COMPILED[fn] = None
    try:
        new = _compile(fn)
    except BaseException:
        del _COMPILED[fn]
        raise
    _COMPILED[fn] = new
    return new


def _compile(fn):
    parsed = check_function(fn)
    fdef = rewrite_function(parsed)
    a = fdef.args
    a.defaults, a.kw_defaults = [], []
    for arg in a.posonlyargs + a.args:
        arg.annotation = None
    fdef.returns = None
    freevars = list(fn.__code__.co_freevars)
    callees = _callees(fdef, fn, [x.arg for x in a.posonlyargs + a.args])
    callee_names = [n for n in callees if n not in freevars and n != RT]
    factory = ast.FunctionDef(
        name="__ember_jit_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in
                                                 [RT] + freevars + callee_names],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=[fdef, ast.Return(ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, parsed.first_line - 1)
    code = compile(module, parsed.filename, "exec")
    ns = {}
    exec(code, fn.__globals__, ns)
    cells = [_cell_value(c, fn) for c in (fn.__closure__ or ())]
    compiled_callees = [_compiled_callee(callees[n]) for n in callee_names]
    new = ns["__ember_jit_factory"](_runtime, *cells, *compiled_callees)
    new.__defaults__ = fn.__defaults__
    new.__doc__ = fn.__doc__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__wrapped__ = fn
    return new


def _cell_value(cell, fn):
    try:
        return cell.cell_contents
    except ValueError:  # a closure variable not assigned yet when the function is scripted
        raise RuntimeError(f"jit.script: a variable {fn.__qualname__} closes over has no value "
                           f"yet; script the function after it is assigned") from None


def _unused_function(name):
    def unused(*args, **kwargs):
        raise RuntimeError(f"{name}() is marked @ember.jit.unused: it was left out of the "
                           f"scripted code, and calling it raises")
    unused.__name__ = name
    return unused


def _snapshot(x):
    if isinstance(x, Tensor):
        return x.detach().clone()
    if isinstance(x, (tuple, list)):
        return type(x)(_snapshot(v) for v in x)
    if isinstance(x, dict):
        return {k: _snapshot(v) for k, v in x.items()}
    return x


class ScriptedMethod:
    """A scripted function or method: runs its rewritten Python; captures its program from
    the first call's inputs when the program is first needed."""

    def __init__(self, name, original, owner=None, trusted=False):
        self.name = name
        self.original = original
        # ember's own modules (trusted) run their forward as it is: no subset check, no
        # rewrite (their control flow on tensors is already cond/where), no type check
        self.compiled = original if trusted else compile_function(original)
        self.signature = Signature(original, skip_self=owner is not None, typed=not trusted)
        self.arg_names = self.signature.names
        self.owner = owner
        self.example = None
        self._program = None

    def bind(self, args, kwargs):
        return self.signature.bind(args, dict(kwargs))

    def use_examples(self, examples):
        """``script(..., example_inputs=[(args...), ...])``: the unannotated parameters take
        the types of the first example's values (torch infers them from the examples), and
        that example is the one the program is captured from (no first call needed)."""
        if not examples:
            return
        first = tuple(examples[0])
        self.signature.infer_from(first)
        self.example = _snapshot(self.signature.bind(first, {}))

    def run(self, owner, args):
        args = self.signature.bind(args, {})
        if self.example is None:
            self.example = _snapshot(args)
        out = self.compiled(owner, *args) if owner is not None else self.compiled(*args)
        return self.signature.check_return(out)

    def has_program(self):
        return self._program is not None or self.example is not None

    def source_code(self):
        """The method's source, as ``.code`` shows it before the program is captured."""
        import textwrap
        return (f"# {self.name}: the scripted source; the program is captured at the first "
                f"call\n" + textwrap.dedent(inspect.getsource(self.original)))

    def program(self):
        if self._program is None:
            if self.example is None:
                raise RuntimeError(
                    f"jit.script: {self.name}() has no program yet. ember captures a scripted "
                    f"method's program (all sizes dynamic) from the inputs of its first call: "
                    f"call it once on an example input before reading .graph/.code or saving, "
                    f"or use ember.jit.trace")
            from ._capture import capture_program
            with scripting():
                self._program = capture_program(self, self.owner, self.example)
        return self._program


class _CompiledMethod:
    """The class attribute of a compiled method: ``m.forward`` is a `ScriptMethod`."""

    def __init__(self, name):
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        return ScriptMethod(obj, obj.__dict__["_jit_methods"][self.name])


def _unused_stub(name):
    def unused(self, *args, **kwargs):
        raise RuntimeError(f"{name}() is marked @ember.jit.unused: it was left out of the "
                           f"scripted module, and calling it raises")
    unused.__name__ = name
    return unused


def _is_user_class(cls):
    return cls is not object and not cls.__module__.startswith(("ember.", "builtins")) and \
        cls.__module__ != "ember"


def _self_calls(fn):
    """Names ``n`` of ``self.n(...)`` calls in ``fn``'s source."""
    try:
        tree = ast.parse(_dedented_source(fn))
    except (OSError, TypeError, SyntaxError):
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
            out.add(node.func.attr)
    return out


def _dedented_source(fn):
    import textwrap
    return textwrap.dedent(inspect.getsource(fn))


_CLASS_CACHE = {}


def _class_namespace(cls):
    ns = {}
    for klass in reversed(cls.__mro__):
        if _is_user_class(klass):
            for k, v in vars(klass).items():
                if k not in ("__dict__", "__weakref__", "__init__"):
                    ns[k] = v
    return ns


def _compiled_names(ns):
    names = {"forward"} if inspect.isfunction(ns.get("forward")) else set()
    names |= {k for k, v in ns.items() if inspect.isfunction(v) and
              get_modifier(v) is FunctionModifiers.EXPORT}
    return names


def _scripted_class(cls):
    """The RecursiveScriptModule subclass for module class ``cls`` (cached)."""
    if cls in _CLASS_CACHE:
        return _CLASS_CACHE[cls]
    ns = _class_namespace(cls)
    compiled = _compiled_names(ns)
    if not compiled:
        raise RuntimeError(f"jit.script: {cls.__name__} has no forward method and no "
                           f"@ember.jit.export methods to compile")
    helpers = set()
    todo = list(compiled)
    while todo:  # the methods the compiled ones call on self, transitively
        for n in _self_calls(ns[todo.pop()]):
            v = ns.get(n)
            if inspect.isfunction(v) and n not in compiled and n not in helpers and \
                    get_modifier(v) is None:
                helpers.add(n)
                todo.append(n)
    body = {}  # what differs from cls: the rest is inherited (super() calls work)
    for k, v in ns.items():
        mod = get_modifier(v) if inspect.isfunction(v) else None
        if k in compiled:
            check_function(v)
            body[k] = _CompiledMethod(k)
        elif mod in (FunctionModifiers.UNUSED, FunctionModifiers.IGNORE_DROP):
            body[k] = _unused_stub(k)
        elif k in helpers:
            body[k] = compile_function(v)
    for k in ("extra_repr", "_get_name", "__repr__"):
        body.setdefault(k, getattr(ScriptModule, k))
    body["__module__"] = cls.__module__
    body["__qualname__"] = cls.__qualname__
    body["_jit_compiled_names"] = tuple(sorted(compiled))
    new = type(cls.__name__, (RecursiveScriptModule, cls), body)
    _CLASS_CACHE[cls] = new
    return new


def _builtin_class(cls):
    """The RecursiveScriptModule subclass for one of ember's own module classes (scripted
    at the top: ``jit.script(nn.Sequential(...))``): ``forward`` as it is."""
    if cls in _CLASS_CACHE:
        return _CLASS_CACHE[cls]
    body = {"forward": _CompiledMethod("forward"), "__module__": cls.__module__,
            "__qualname__": cls.__qualname__, "_jit_compiled_names": ("forward",),
            "_jit_trusted": True}
    for k in ("extra_repr", "_get_name", "__repr__"):
        body[k] = getattr(ScriptModule, k)
    new = type(cls.__name__, (RecursiveScriptModule, cls), body)
    _CLASS_CACHE[cls] = new
    return new


def _script_module(mod, memo, top=False):
    if isinstance(mod, ScriptModule) or mod is None:
        return mod
    if id(mod) in memo:
        return memo[id(mod)]
    children = {n: _script_module(c, memo) for n, c in mod._modules.items()}
    cls = type(mod)
    if not _is_user_class(cls) and not top:
        if all(children[n] is c for n, c in mod._modules.items()):
            result = mod
        else:  # an ember container holding user modules: the same container, scripted children
            result = cls.__new__(cls)
            result.__dict__.update(mod.__dict__)
            result.__dict__["_modules"] = children
        memo[id(mod)] = result
        return result
    scls = _scripted_class(cls) if _is_user_class(cls) else _builtin_class(cls)
    new = scls.__new__(scls)
    d = new.__dict__
    d.update({k: v.value if isinstance(v, Attribute) else v for k, v in mod.__dict__.items()})
    for k, v in mod.__dict__.items():  # hooks registered later on one are not the other's
        if k.endswith(("_hooks", "_hooks_with_kwargs", "_hooks_always_called")):
            d[k] = type(v)(v)
    d["_parameters"] = dict(mod._parameters)
    d["_buffers"] = dict(mod._buffers)
    d["_non_persistent_buffers_set"] = set(mod._non_persistent_buffers_set)
    d["_modules"] = children
    d["_jit_original_name"] = cls.__name__
    trusted = getattr(scls, "_jit_trusted", False)
    d["_jit_methods"] = {n: ScriptedMethod(n, getattr(cls, n), owner=new, trusted=trusted)
                         for n in scls._jit_compiled_names}
    memo[id(mod)] = new
    return new


def _use_examples(scripted, example_inputs, original):
    """``example_inputs`` of a module: ``{module or its method: [(args...), ...]}`` or a
    list (for ``forward``)."""
    if not example_inputs or not isinstance(scripted, ScriptModule):
        return
    methods = scripted.__dict__["_jit_methods"]
    if not isinstance(example_inputs, dict):
        example_inputs = {original: example_inputs}
    for key, examples in example_inputs.items():
        name = "forward" if isinstance(key, Module) else getattr(key, "__name__", None)
        if name in methods and hasattr(methods[name], "use_examples"):
            methods[name].use_examples(examples)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Script the function or ``nn.Module`` ``obj`` (see the module docstring for ember's
    design): returns a `ScriptFunction` or `RecursiveScriptModule` that runs like the
    original, checks its argument types, and has a program (``graph``, ``code``, ``save``)
    with data-dependent ``if``/``while`` kept as ``cond``/``while_loop``.

    Raises `ember.jit.frontend.NotSupportedError` (naming the file and line) for Python
    outside the TorchScript subset."""
    if optimize is not None:
        import warnings
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "ember.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        out = _script_module(obj, {}, top=True)
        _use_examples(out, example_inputs, obj)
        return out
    if inspect.isclass(obj):
        if issubclass(obj, Module):
            raise RuntimeError(f"Type '{obj}' cannot be compiled since it inherits from "
                               f"nn.Module, pass an instance instead")
        # a TorchScript class: torch compiles it and returns the class itself; its instances
        # are plain Python objects to the functions and modules scripted here
        return obj
    if inspect.ismethod(obj) and isinstance(obj.__self__, Module):
        return getattr(script(obj.__self__), obj.__name__)
    if inspect.isfunction(obj):
        if get_modifier(obj) in (FunctionModifiers.IGNORE, FunctionModifiers.UNUSED):
            return obj
        method = ScriptedMethod(obj.__name__, obj)
        if example_inputs is not None:
            if isinstance(example_inputs, dict):
                example_inputs = example_inputs.get(obj)
            method.use_examples(example_inputs)
        return ScriptFunction(method, obj.__qualname__)
    raise RuntimeError(f"Type '{type(obj).__name__}' cannot be compiled since it inherits from "
                       f"nn.Module, pass in an instance instead" if isinstance(obj, type) else
                       f"jit.script: cannot compile an object of type {type(obj).__name__}")

