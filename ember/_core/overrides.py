"""The override protocol: ``__ember_function__`` on tensor-likes and Tensor subclasses.

Arguments that define ``__ember_function__`` (fx Proxies, tensor subclasses, other
tensor-likes) divert a *public* function call (`overridable`) to their override,
as torch's ``__torch_function__`` does.  Nothing is scanned on the eager hot path
unless an override type is alive (``SHARED.overrides``); the dispatcher raises
`NeedsOverride` when it meets one anyway.
"""
import functools
import inspect
import threading

from . import dtype as _dt
from .errors import NUMPY_ERRORS, translate
from .state import SHARED
from .tensor import Tensor

__all__ = ["NeedsOverride", "SUBCLASS_OVERRIDES", "OVERRIDE_TYPES", "register_override_type",
           "unregister_override_type", "handle_override", "overridable", "routes_overrides",
           "route_tensor_methods", "DisableTorchFunctionSubclass", "DisableTorchFunction",
           "default_torch_function", "FUNCTION_MODES"]

SUBCLASS_OVERRIDES = set()  # Tensor subclasses defining __ember_function__


class NeedsOverride(Exception):
    """Raised inside the dispatcher when an argument defines ``__ember_function__``."""



OVERRIDE_TYPES = set()  # non-Tensor types registered with `register_override_type`


def register_override_type(cls):
    """Make every public function honour ``cls.__ember_function__`` wherever an instance
    of ``cls`` appears in its arguments (nested lists/tuples and keywords included).

    Tensor subclasses defining ``__ember_function__`` are registered when they are
    created; other tensor-likes register here (fx Proxies instead raise
    ``SHARED.overrides`` while one is alive).  Unregistered types are still honoured
    wherever the dispatcher meets them, but a composite that reads ``.shape`` first
    would fail.  While any override is possible, public functions scan their arguments
    (the only cost; nothing is scanned otherwise)."""
    if getattr(cls, "__ember_function__", None) is None:
        raise TypeError(f"{cls.__name__} does not define __ember_function__")
    target = SUBCLASS_OVERRIDES if issubclass(cls, Tensor) else OVERRIDE_TYPES
    if cls not in target:
        target.add(cls)
        SHARED.overrides += 1


def unregister_override_type(cls):
    """Undo `register_override_type` (tests that define throwaway override types)."""
    for target in (SUBCLASS_OVERRIDES, OVERRIDE_TYPES):
        if cls in target:
            target.discard(cls)
            SHARED.overrides -= 1


def _override_of(t):
    """The override of type ``t``: ``__ember_function__``, or torch's ``__torch_function__``
    on a tensor-like that is not a Tensor (Tensor subclasses alias theirs when created)."""
    f = getattr(t, "__ember_function__", None)
    if f is None and not issubclass(t, Tensor):
        f = getattr(t, "__torch_function__", None)
        # torch's own tensors' default implementation calls the function back: a torch
        # tensor handed to ember (from_dlpack, tensor(t)) is data, as torch ignores its default
        if f is not None and getattr(getattr(f, "__func__", f), "__module__", "") \
                .startswith("torch."):
            return None
    return f


def _collect_overrides(a, found):
    if isinstance(a, (list, tuple)):
        for x in a:
            _collect_overrides(x, found)
        return
    if isinstance(a, (dict, slice)):  # t[:, :n] with a traced n; dicts of tensors
        for x in (a.values() if isinstance(a, dict) else (a.start, a.stop, a.step)):
            _collect_overrides(x, found)
        return
    t = type(a)
    if _override_of(t) is not None and t not in found and \
            (not isinstance(a, Tensor) or t in SUBCLASS_OVERRIDES):
        # torch's order: a subclass is asked before its parents
        for i, f in enumerate(found):
            if issubclass(t, f):
                found.insert(i, t)
                return
        found.append(t)


def _override_types(args, kwargs):
    found = []
    for a in args:
        _collect_overrides(a, found)
    if kwargs:
        for a in kwargs.values():
            _collect_overrides(a, found)
    return found


class _FunctionModes(threading.local):
    """This thread's function modes (torch's ``TorchFunctionMode`` stack, `ember.overrides`):
    while one is active every public call reaches the top mode first, and ``SHARED.overrides``
    is raised so that public functions look.  ``skip``: the next override check answers
    no (`ember.overrides.redispatch_function`)."""

    def __init__(self):
        self.stack = []
        self.skip = False


FUNCTION_MODES = _FunctionModes()


def _run_skipping(public, args, kwargs):
    """``public`` with the override of this one call skipped; calls inside still see them."""
    impl = getattr(public, "__wrapped_impl__", None)
    if impl is not None:
        try:
            return impl(*args, **kwargs)
        except NeedsOverride:  # the composite met the override in an op it applies itself
            pass
    with DisableTorchFunction():
        return (impl or public)(*args, **kwargs)


def handle_override(public, args, kwargs):
    """Call the top function mode, then the ``__ember_function__`` of the override types
    among ``args``/``kwargs``, with ``public`` as ``func`` (the first that does not return
    NotImplemented wins).  A mode's handler runs under the modes below it.  A function
    with ``__override_args__`` hands on the arguments as that makes them (einsum's list of
    operands, flattened as torch's)."""
    norm = getattr(public, "__override_args__", None)
    if norm is not None:
        args = norm(args)
    if FUNCTION_MODES.skip:
        FUNCTION_MODES.skip = False
        return _run_skipping(public, args, kwargs)
    types = _override_types(args, kwargs)
    stack = FUNCTION_MODES.stack
    if stack:
        mode = stack.pop()
        try:
            r = mode.__torch_function__(public, tuple(types), args, kwargs)
        finally:
            stack.append(mode)
        if r is not NotImplemented:
            return r
    for t in types:
        r = _override_of(t)(public, tuple(types), args, kwargs)
        if r is not NotImplemented:
            return r
    raise TypeError(f"no implementation found for '{getattr(public, '__qualname__', public)}' on "
                    f"types that implement __ember_function__: {types}")


# NumPy's spellings of parameter names, which torch's argument parser accepts for its
# operators' own (``torch.sum(t, axis=1, keepdims=True)``; torchmetrics calls
# ``torch.prod(x, axis=0)``)
_NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input",
                  "x1": "input", "x2": "other"}
_ALIAS_KEYS = frozenset(_NUMPY_ALIASES)
_PARAMS = {}  # function -> the names of its parameters


def _torch_spellings(fn, kwargs):
    """Rename NumPy-spelled keyword arguments in ``kwargs`` (in place) to the parameter
    names of ``fn`` they alias, where ``fn`` has that parameter and not the alias."""
    params = _PARAMS.get(fn)
    if params is None:
        try:
            params = frozenset(inspect.signature(fn).parameters)
        except (TypeError, ValueError):  # no introspectable signature: leave kwargs alone
            params = frozenset()
        _PARAMS[fn] = params
    for alias, name in _NUMPY_ALIASES.items():
        if alias in kwargs and alias not in params and name in params:
            if name in kwargs:
                raise TypeError(f"{getattr(fn, '__name__', 'function')}() got an unexpected "
                                f"keyword argument '{alias}' (it spells '{name}', also given)")
            kwargs[name] = kwargs.pop(alias)


def overridable(fn, name=None):
    """Make public function (or Tensor method) ``fn`` honour ``__ember_function__``.

    Arguments are scanned for override types only while ``SHARED.overrides`` is raised,
    so the eager hot path pays one attribute test; an override the dispatcher meets
    otherwise (`NeedsOverride`) is routed too.  The override receives the returned
    wrapper as ``func``.  Wrapping an overridable function again wraps its
    implementation: a Tensor method then has its own identity, distinct from the public
    function (``Tensor.matmul`` vs ``ember.matmul``), like torch's."""
    fn = getattr(fn, "__wrapped_impl__", fn)

    @functools.wraps(fn)
    def public(*args, **kwargs):
        if SHARED.overrides and (FUNCTION_MODES.stack or FUNCTION_MODES.skip or
                                 _override_types(args, kwargs)):
            return handle_override(public, args, kwargs)
        try:
            if kwargs:
                if type(kwargs.get("dtype")) is type:  # dtype=float, as torch's
                    kwargs["dtype"] = _dt.from_python_type(kwargs["dtype"], public.__name__)
                if not _ALIAS_KEYS.isdisjoint(kwargs):  # sum(x, axis=1), as torch's
                    _torch_spellings(fn, kwargs)
            return fn(*args, **kwargs)
        except NeedsOverride:
            return handle_override(public, args, kwargs)
        except NUMPY_ERRORS as e:  # a NumPy exception from a composite: torch's type
            t = translate(public.__name__, args, e)
            if t is None:
                raise
            raise t from None
    public.__wrapped_impl__ = fn
    if name is not None:
        public.__name__ = name
        public.__qualname__ = f"Tensor.{name}"
    return public


def routes_overrides(fn):
    """Mark ``fn`` as routing overrides itself (fast paths that catch `NeedsOverride`)."""
    fn.__ember_routes__ = True
    return fn


# Tensor members that stay unrouted: metadata of the tensor's own storage, answered
# concretely (they sit on the hottest internal paths, and an override commonly calls
# them), conversions to Python/NumPy data, and Python protocol hooks.
_UNROUTED_METHODS = frozenset({
    "size", "dim", "numel", "nelement", "ndimension", "element_size", "stride",
    "storage_offset", "is_contiguous", "data_ptr", "is_floating_point", "is_complex",
    "is_signed", "item", "tolist", "numpy", "retain_grad", "requires_grad_",
    "get_device", "untyped_storage", "storage", "is_inference", "is_set_to",
    "is_pinned", "is_shared", "share_memory_", "register_hook",
    "register_post_accumulate_grad_hook"})
_ROUTED_DUNDERS = frozenset({"__getitem__", "__setitem__"})


def route_tensor_methods(cls):
    """Wrap the public methods of ``cls`` (Tensor) with `overridable`, so
    ``tensor.method(proxy)`` and ``subclass_instance.method()`` reach the override with
    the Tensor method as ``func``.  Run once after every module attached its methods."""
    for name, v in list(vars(cls).items()):
        if (name[0] == "_" and name not in _ROUTED_DUNDERS) or name in _UNROUTED_METHODS:
            continue
        if not callable(v) or isinstance(v, (type, staticmethod, classmethod, property)) or \
                getattr(v, "__ember_method__", False):
            continue
        if getattr(v, "__ember_routes__", False) and getattr(v, "__name__", None) == name:
            continue  # routes itself; an alias (Tensor.greater = Tensor.gt) gets its own name

        m = overridable(v, name)
        m.__module__ = cls.__module__  # pickles and prints as Tensor.<name>
        m.__ember_method__ = True
        setattr(cls, name, m)


# ---- torch's spelling: __torch_function__, its default and the disabling guards ----------
class DisableTorchFunctionSubclass:
    """Inside this block Tensor subclasses' overrides are not consulted: functions run on
    their data as on plain tensors (what a subclass's ``__torch_function__`` uses to call
    the real implementation)."""
    _sets = (SUBCLASS_OVERRIDES,)

    def __enter__(self):
        self._saved = [set(t) for t in self._sets]
        for t in self._sets:
            SHARED.overrides -= len(t)
            t.clear()
        return self

    def __exit__(self, *exc):
        for t, saved in zip(self._sets, self._saved):
            t |= saved
            SHARED.overrides += len(saved)


class DisableTorchFunction(DisableTorchFunctionSubclass):
    """Like `DisableTorchFunctionSubclass`, for every tensor-like's override and the
    function modes too."""
    _sets = (SUBCLASS_OVERRIDES, OVERRIDE_TYPES)

    def __enter__(self):
        self._modes, FUNCTION_MODES.stack = FUNCTION_MODES.stack, []
        return super().__enter__()

    def __exit__(self, *exc):
        FUNCTION_MODES.stack = self._modes
        super().__exit__(*exc)


def disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """torch's ``_disabled_torch_function_impl``: as a Tensor subclass's
    ``__torch_function__`` it marks the subclass as having no override (its operations
    run as on plain tensors and return plain tensors); called, it runs ``func`` so."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


disabled_torch_function_impl.__ember_no_override__ = True


def _convert(r, cls):
    if isinstance(r, Tensor) and not isinstance(r, cls):
        return r.as_subclass(cls)
    if isinstance(r, (tuple, list)) and not hasattr(r, "_fields"):
        return type(r)(_convert(x, cls) for x in r)
    return r


def default_torch_function(cls, func, types, args=(), kwargs=None):
    """``Tensor.__torch_function__``: run ``func`` without subclass overrides and return
    tensors as instances of ``cls`` (torch's default)."""
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        r = func(*args, **(kwargs or {}))
    return _convert(r, cls)
