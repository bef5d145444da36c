"""``ember.compile``: compiled functions and modules, and the switches around them.

A compiled function runs the user's Python on every call inside a capture session
(`ember._dynamo.session`): tensor work is recorded lazily and runs as compiled graphs,
found by key in the function's cache.  Nothing depends on bytecode, so every Python
version ember supports behaves the same.
"""
import functools
import inspect
import threading
import weakref

from .._core.state import STATE
from .._core.tensor import Tensor
from ..nn.modules.module import Module
from . import config
from .config import FORCE_BACKEND, STANCE
from .backends import lookup_backend
from .cache import FunctionCache
from .replay import MISS, Recorder, make_plan, snapshot
from .session import _SESSIONS, CaptureSession, current_session
from .symbolic import plain

__all__ = ["compile", "optimize", "OptimizedModule", "CompiledFunction", "disable",
           "reset", "is_compiling", "graph_break", "set_stance", "mark_dynamic", "mark_static",
           "maybe_mark_dynamic", "all_caches"]

_CACHES = weakref.WeakSet()


class _ThreadState(threading.local):
    """Per thread: how many disabled regions (``disable``) the thread is inside."""
    disabled = 0


_LOCAL = _ThreadState()


def all_caches():
    return list(_CACHES)


def _backend_name(backend):
    if isinstance(backend, str):
        return backend
    return getattr(backend, "__name__", type(backend).__name__)


def _flat_tensors(args, kwargs, sig_names):
    """The tensors among the call's arguments (nested in lists, tuples and dicts), with
    readable names."""
    out, names = [], []

    def walk(x, name, depth):
        if isinstance(x, Tensor):
            out.append(x)
            names.append(name)
        elif depth < 4 and type(x) in (list, tuple):
            for i, y in enumerate(x):
                walk(y, f"{name}_{i}", depth + 1)
        elif depth < 4 and type(x) is dict:
            for k, y in x.items():
                walk(y, f"{name}_{k}", depth + 1)
    for i, a in enumerate(args):
        walk(a, sig_names[i] if i < len(sig_names) else f"args_{i}", 0)
    for k, v in kwargs.items():
        walk(v, k, 0)
    return out, names


def _signature(args, kwargs):
    """What torch's entry guards check of the arguments: tensor metadata, numbers' types."""
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, Tensor):
            d = a.__dict__.get("_data")
            out.append((getattr(d, "shape", None), getattr(d, "dtype", None), a._requires_grad))
        elif isinstance(a, (int, float, bool, str)) or a is None:
            out.append(type(a))
        else:
            out.append(id(a))
    return tuple(out)


def _has_ndarray(values):
    import numpy as np
    for v in values:
        if isinstance(v, np.ndarray) or type(v) in (list, tuple) and \
                any(isinstance(x, np.ndarray) for x in v):
            return True
    return False


def _param_names(fn):
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        return []


class CompiledFunction:
    """``fn`` compiled: callable like ``fn``; ``_torchdynamo_orig_callable`` is ``fn``."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="inductor", mode=None,
                 options=None, module=None, name=None):
        self._torchdynamo_orig_callable = fn
        self.fn = fn
        self.module = module
        backend_fn = lookup_backend(backend)
        if options and isinstance(backend, str) and backend == "inductor":
            from .backends.common import AotBackend
            if isinstance(backend_fn, AotBackend):
                backend_fn = _with_options(backend_fn, options)
        if name is None:
            name = f"{type(module).__qualname__}.forward" if module is not None else \
                getattr(fn, "__qualname__", None) or type(fn).__name__
        self.cache = FunctionCache(name, backend_fn, _backend_name(backend), dynamic=dynamic,
                                   fullgraph=fullgraph, options=options)
        self.mode = mode
        self._compile_kwargs = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                    mode=mode, options=options, name=name)
        self._fullgraph, self._dynamic = fullgraph, dynamic
        _CACHES.add(self.cache)
        # argument names for messages: a module's are its forward's (not `_call_impl(*args)`)
        self._sig_names = _param_names(module.forward if module is not None else fn)
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args, **kwargs):
        plans = self.cache.replay_plans
        if plans and config.replay and _STANCE[0] != "force_eager" and \
                not _SESSIONS.stack and not _LOCAL.disabled:
            # the replay fast path first: a plan exists only after calls that compiled
            for plan in plans:
                r = plan.run(args, kwargs)
                if r is not MISS:
                    if plan is not plans[0]:  # the plan hit last is tried first
                        plans.remove(plan)
                        plans.insert(0, plan)
                    return r
        if _LOCAL.disabled or _STANCE[0] == "force_eager" or current_session() is not None or \
                STATE.modes and not config.__dict__.get("_allow_under_modes", True):
            return self.fn(*args, **kwargs)
        first = not self.cache.called
        self.cache.called = True
        if first and _STANCE[0] == "eager_then_compile":
            return self.fn(*args, **kwargs)
        if first and _STANCE[0] == "aot_eager_then_compile":
            # the first call runs through aot_eager, compiled graphs come with later calls
            return CompiledFunction(self.fn, backend="aot_eager", module=self.module,
                                    fullgraph=self._fullgraph)._run(args, kwargs)
        signature = _signature(args, kwargs)
        if _STANCE[0] == "eager_on_recompile" and self.cache.entries and \
                signature not in self.cache.signatures:
            # arguments no compiled graph was made for: torch's guards fail on entry and
            # the function runs eagerly (is_compiling() is False inside)
            return self.fn(*args, **kwargs)
        result = self._run(args, kwargs)
        self.cache.signatures.add(signature)
        return result

    def _run(self, args, kwargs, explain=None):
        if _has_ndarray(args) or _has_ndarray(kwargs.values()):
            from .numpy_programs import run_numpy_program
            return run_numpy_program(self, args, kwargs, explain)
        self._apply_config()
        session = CaptureSession(self.cache, explain=explain)
        session.module = self.module
        cache = self.cache
        recorder = Recorder() if (config.replay and explain is None and
                                  cache.replay_failures < 8) else None
        call_args = args
        before = snapshot(self, args, kwargs) if recorder is not None else None
        with session:
            flat, names = _flat_tensors(args, kwargs, self._sig_names)
            session.bind_arguments(flat, names)
            if cache.dynamic is not False and not config.specialize_int:
                call_args = session.bind_ints(args, self._sig_names)
            if recorder is None:
                return plain(self.fn(*call_args, **kwargs))
            with recorder:
                result = plain(self.fn(*call_args, **kwargs))
        plan, why = make_plan(self, recorder, session, args, kwargs, result, before)
        if plan is None:
            cache.replay_failures += 1
            cache.replay_reason = why
        else:
            # one plan per guard set (train and eval, two static shapes), so calls that
            # alternate between them replay instead of remaking one plan in turn
            plans = cache.replay_plans
            plans.insert(0, plan)
            del plans[max(config.cache_size_limit, 1):]
        return result

    def _apply_config(self):
        """The global settings that change how this call captures: error_on_graph_break
        acts as fullgraph=True, assume_static_by_default=False as dynamic=True (where the
        compile call did not say)."""
        cache = self.cache
        cache.fullgraph = self._fullgraph or config.error_on_graph_break
        if self._dynamic is None:
            cache.dynamic = None if config.assume_static_by_default else True

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __repr__(self):
        return f"<compiled {self.fn!r}>"

    def __reduce__(self):
        # pickled and deep-copied as what was compiled and how: the copy starts with an
        # empty cache of its own (compiled graphs are not data)
        return (_rebuild_compiled_function, (self.fn, self.module, self._compile_kwargs))


def _rebuild_compiled_function(fn, module, kwargs):
    return CompiledFunction(fn, module=module, **kwargs)


def _with_options(aot_backend, options):
    from .backends.common import AotBackend

    def fw(gm, example):
        try:
            from .._inductor import compile_fx
        except ImportError:
            return aot_backend.fw_compiler(gm, example)
        return compile_fx(gm, example, options=options)
    return AotBackend(fw)


class OptimizedModule(Module):
    """A compiled ``nn.Module``: calls run ``_orig_mod`` compiled; its parameters, buffers
    and state_dict are the original module's (keys prefixed ``_orig_mod.``, as in torch).
    As torch's, attribute reads and writes (``training`` included) go to ``_orig_mod``."""

    _opt_mod_attributes = frozenset(("_orig_mod", "_compiled_call", "forward",
                                     "_torchdynamo_orig_callable"))

    def __init__(self, mod, compiled_forward):
        super().__init__()
        self.__dict__.pop("training", None)  # `training` is the original module's
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", compiled_forward)
        object.__setattr__(self, "_torchdynamo_orig_callable", mod)

    def forward(self, *args, **kwargs):
        return self._compiled_call(*args, **kwargs)

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        self._orig_mod.training = value

    def __getattr__(self, name):
        modules = self.__dict__.get("_modules")
        if modules is None or "_orig_mod" not in modules:
            raise AttributeError(f"'OptimizedModule' object has no attribute '{name}'")
        if name == "_orig_mod":
            return modules["_orig_mod"]
        return getattr(modules["_orig_mod"], name)

    def __setattr__(self, name, value):
        if name in OptimizedModule._opt_mod_attributes or hasattr(type(self), name) or \
                "_modules" not in self.__dict__ or "_orig_mod" not in self._modules:
            return super().__setattr__(name, value)
        setattr(self._orig_mod, name, value)

    def __delattr__(self, name):
        if name in OptimizedModule._opt_mod_attributes or hasattr(type(self), name):
            return super().__delattr__(name)
        delattr(self._orig_mod, name)

    def __len__(self):
        return len(self._orig_mod)

    def __dir__(self):
        return sorted(set(dir(self._orig_mod)) | set(super().__dir__()))

    def __repr__(self):
        return f"OptimizedModule(\n  (_orig_mod): {self._orig_mod!r}\n)"

    def __reduce__(self):
        # as torch's: the original module and how it was compiled (a fresh cache)
        kwargs = getattr(self._compiled_call, "_compile_kwargs", None)
        if kwargs is None:  # made by disable()
            return (disable, (self._orig_mod,))
        return (_rebuild_optimized_module, (self._orig_mod, kwargs))


def _rebuild_optimized_module(mod, kwargs):
    return compile(mod, **kwargs)


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None,
            options=None, name=None, disable=False):
    """Optimizes the given model or function with capture and a compiler backend.

    Works as a call and as a decorator, on functions, methods and ``nn.Module``s (which
    become an `OptimizedModule`).  The program keeps its eager meaning exactly: its Python
    runs on every call, tensor work runs as compiled graphs.  ``fullgraph=True`` raises
    `ember._dynamo.exc.Unsupported` at the first graph break; ``dynamic``: None detects
    varying sizes automatically, True makes sizes symbolic from the first call, False
    never; ``backend``: "inductor" (the C code generator), "aot_eager", "eager" or a
    callable ``(gm, example_inputs) -> callable`` (None: the default, "inductor");
    ``name`` names the function in logs and warnings; ``disable=True`` returns ``model``
    unchanged.
    """
    if model is None:
        def decorator(m):
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                           options=options, name=name, disable=disable)
        return decorator
    if backend is None:
        backend = "inductor"
    _check_mode_options(mode, options, backend)
    if disable:
        return model
    if not callable(model):
        raise RuntimeError(f"ember.compile: {model!r} is not callable")
    kw = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
              options=options, name=name)
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model._call_impl, module=model, **kw))
    return CompiledFunction(model, **kw)


_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _check_mode_options(mode, options, backend):
    """torch's checks, made when ``compile`` is called: one of mode and options; a known
    mode; options the inductor backend knows."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None:
        if not isinstance(options, dict):
            raise TypeError(f"options must be a dict, got {type(options).__name__}")
        if backend == "inductor":
            from .._inductor.compile_fx import _OPTION_NAMES
            for key in options:
                if key not in _OPTION_NAMES:
                    raise RuntimeError(f"Unexpected optimization option {key}, known options "
                                       f"are {sorted(_OPTION_NAMES)}")


def optimize(backend="inductor", *, nopython=False, dynamic=None, disable=False):
    """``ember._dynamo.optimize(backend)(fn)``: torch's older spelling of `compile`."""
    def decorator(fn):
        return compile(fn, backend=backend, fullgraph=nopython, dynamic=dynamic,
                       disable=disable)
    return decorator


def _module_compile(self, *args, **kwargs):
    """Compile this module's calls in place with `ember.compile` (``Module.compile``): the
    module stays itself (no ``_orig_mod.`` prefix in its state_dict)."""
    opts = _compile_kwargs(*args, **kwargs)
    _check_mode_options(opts["mode"], opts["options"], opts["backend"])
    if opts.pop("disable"):
        return
    compiled = CompiledFunction(self._call_impl, module=self, **opts)
    object.__setattr__(self, "_compiled_call_impl", compiled)


def _compile_kwargs(fullgraph=False, dynamic=None, backend="inductor", mode=None,
                    options=None, name=None, disable=False):
    return dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend or "inductor",
                mode=mode, options=options, name=name, disable=disable)


class _Suspended:
    """Capture is off inside (a disabled function runs eagerly)."""

    def __init__(self, session):
        self.session = session

    def __enter__(self):
        s = self.session
        self.saved = list(STATE.modes)
        STATE.modes[:] = [m for m in STATE.modes if m is not s.mode]
        STATE.intercept = bool(STATE.modes)
        _LOCAL.disabled += 1

    def __exit__(self, *exc):
        _LOCAL.disabled -= 1
        STATE.modes[:] = self.saved
        STATE.intercept = bool(self.saved)


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` runs eagerly even when called from compiled code (a graph break at the call);
    usable as a decorator.  A module comes back wrapped as torch's does (an
    `OptimizedModule` whose calls run eagerly)."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if isinstance(fn, Module):
        return OptimizedModule(fn, disable(fn._call_impl, recursive, reason=reason))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        s = current_session()
        if s is None or _LOCAL.disabled:
            return fn(*args, **kwargs)
        s.graph_break(f"call to a function marked ember._dynamo.disable "
                      f"({getattr(fn, '__qualname__', fn)})" + (f": {reason}" if reason else ""))
        with _Suspended(s):
            return fn(*args, **kwargs)
    wrapper._torchdynamo_disable = True
    return wrapper


def is_compiling():
    """True while code runs inside a compiled region (``torch.compiler.is_compiling``)."""
    return current_session() is not None and not _LOCAL.disabled


def graph_break(msg=""):
    """End the current graph here and start the next one (``torch._dynamo.graph_break``);
    outside compiled code, nothing."""
    s = current_session()
    if s is not None and not _LOCAL.disabled:
        s.graph_break("ember._dynamo.graph_break() was called" + (f": {msg}" if msg else ""))


_STANCE = STANCE  # shared with the cache, which acts on the recompile stances
_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
            "eager_then_compile", "aot_eager_then_compile")


class set_stance:
    """How compiled functions behave from now on (``torch.compiler.set_stance``):

    * ``"default"`` compiles; with ``force_backend``, graphs compiled from now on use that
      backend (graphs compiled before are still used);
    * ``"force_eager"`` runs every compiled function eagerly (its graphs are kept);
    * ``"eager_on_recompile"`` uses graphs compiled already and runs eagerly where
      another would have to be compiled; ``"fail_on_recompile"`` raises there;
    * ``"eager_then_compile"`` runs a compiled function's first call eagerly and compiles
      from the second; ``"aot_eager_then_compile"`` runs the first call with "aot_eager".

    ``skip_guard_eval_unsafe`` is accepted; beyond torch, ember evaluates the guards
    anyway, so results stay right.  A plain call changes the stance; used as a context
    manager or a decorator, the previous stance comes back afterwards.  An unknown stance
    raises ValueError (torch accepts any name and ignores it)."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in _STANCES:
            raise ValueError(f"set_stance({stance!r}): the stances are {list(_STANCES)}")
        if force_backend is not None:
            if stance != "default":
                raise RuntimeError("non-default stance cannot have force_backend set")
            lookup_backend(force_backend)  # an unknown backend fails now, not at a compile
        self.stance = stance
        self.prev = (_STANCE[0], FORCE_BACKEND[0])
        _STANCE[0], FORCE_BACKEND[0] = stance, force_backend

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _STANCE[0], FORCE_BACKEND[0] = self.prev

    def __call__(self, fn):
        mine = (_STANCE[0], FORCE_BACKEND[0])
        _STANCE[0], FORCE_BACKEND[0] = self.prev  # as a decorator it applies during calls

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = (_STANCE[0], FORCE_BACKEND[0])
            _STANCE[0], FORCE_BACKEND[0] = mine
            try:
                return fn(*args, **kwargs)
            finally:
                _STANCE[0], FORCE_BACKEND[0] = prev
        return wrapper


def reset():
    """Forget every compiled graph and dynamic mark (``torch._dynamo.reset``)."""
    for c in list(_CACHES):
        c.reset()


def _indices(t, index):
    if isinstance(index, int):
        index = [index]
    nd = t.__dict__["_data"].ndim if "_data" in t.__dict__ else t.dim()
    out = []
    for i in index:
        if not -nd <= i < nd:
            raise IndexError(f"mark_dynamic: dimension {i} is out of range for a tensor of "
                             f"{nd} dimensions")
        out.append(i % nd if nd else i)
    return out


def mark_dynamic(t, index, *, min=None, max=None):
    """Compile dimension(s) ``index`` of ``t`` as symbolic from the first call."""
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_dynamic expects a Tensor, got {type(t).__name__}")
    s = t.__dict__.setdefault("_dynamo_dynamic_indices", set())
    s.update(_indices(t, index))
    if min is not None or max is not None:
        t.__dict__.setdefault("_dynamo_dynamic_range", {}).update(
            {i: (min, max) for i in _indices(t, index)})


def maybe_mark_dynamic(t, index):
    """Like `mark_dynamic`, but the dimension may still be specialised."""
    if not isinstance(t, Tensor):
        raise TypeError(f"maybe_mark_dynamic expects a Tensor, got {type(t).__name__}")
    t.__dict__.setdefault("_dynamo_weak_dynamic_indices", set()).update(_indices(t, index))


def mark_static(t, index=None):
    """Never compile dimension(s) ``index`` (all when None) of ``t`` as symbolic."""
    if isinstance(t, Module):
        t._dynamo_marked_static = True
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_static expects a Tensor or Module, got {type(t).__name__}")
    idx = range(t.dim()) if index is None else _indices(t, index)
    t.__dict__.setdefault("_dynamo_static_indices", set()).update(idx)
