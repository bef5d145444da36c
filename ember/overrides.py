"""``torch.overrides``: the ``__torch_function__`` protocol's public module.

ember honours ``__torch_function__`` (its own name: ``__ember_function__``) on Tensor
subclasses and tensor-likes in every public function (`ember._core.overrides`).  This module
is torch's API over it: the helpers that user functions call to be overridable
(`has_torch_function`, `handle_torch_function`, `wrap_torch_function`), the listings of what
can be overridden, and function modes (`TorchFunctionMode`): while a mode is active (``with
mode:``) every public call reaches ``mode.__torch_function__(func, types, args, kwargs)``,
and calls made inside it go to the modes below it, then to the implementation.

Public functions see a mode at their entry; the operators that skip that check (the
elementwise fast paths) are caught by a dispatch mode of this module that raises
`NeedsOverride` while a function mode is active, which routes them the same way.
"""
import contextlib
import functools
import inspect
import sys
import types as _types
import warnings

from ._core.dispatch import DispatchMode
from ._core.overrides import (FUNCTION_MODES, NeedsOverride, _override_types,
                              handle_override)
from ._core.state import SHARED, STATE
from ._core.tensor import Tensor

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides",
           "handle_torch_function", "has_torch_function", "resolve_name", "is_tensor_like",
           "is_tensor_method_or_property", "wrap_torch_function", "enable_reentrant_dispatch",
           "redispatch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "get_default_nowrap_functions", "TorchFunctionMode", "BaseTorchFunctionMode"]


# ---- asking and handling -----------------------------------------------------------------

def _consume_skip():
    if FUNCTION_MODES.skip:
        FUNCTION_MODES.skip = False
        return True
    return False


def has_torch_function(relevant_args):
    """Check for ``__torch_function__`` implementations (or an active function mode) among
    the elements of the iterable ``relevant_args``.

    Returns True if any argument is a Tensor-like other than a plain Tensor whose override
    is enabled, or if a `TorchFunctionMode` is active."""
    if _consume_skip():
        return False
    if FUNCTION_MODES.stack:
        return True
    return bool(SHARED.overrides and _overloaded_types(tuple(relevant_args)))


def has_torch_function_unary(a):
    """Special case of `has_torch_function` for a single argument."""
    return has_torch_function((a,))


def has_torch_function_variadic(*args):
    """Special case of `has_torch_function` that takes its arguments unpacked."""
    return has_torch_function(args)


def _overloaded_types(relevant_args):
    return _override_types(relevant_args, None)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Implement a function with checks for ``__torch_function__`` overrides: the top
    active function mode, then each overriding type among ``relevant_args`` (subclasses
    before their parents) is called as ``__torch_function__(public_api, types, args,
    kwargs)``; the first result that is not NotImplemented is returned.

    Raises TypeError if no implementation is found."""
    try:
        return handle_override(public_api, args, kwargs)
    except TypeError as e:
        if not str(e).startswith("no implementation found"):
            raise
        name = f"{getattr(public_api, '__module__', '')}.{getattr(public_api, '__name__', '')}"
        found = [t for t in _overloaded_types(tuple(relevant_args))]
        msg = f"no implementation found for '{name}' on types that implement " \
              f"__torch_function__: {found}"
        if FUNCTION_MODES.stack:
            msg += f" nor in mode {FUNCTION_MODES.stack[-1]}"
        raise TypeError(msg) from None


def wrap_torch_function(dispatcher):
    """Wraps a given function with ``__torch_function__``-related functionality:
    ``dispatcher`` (with the function's signature) returns the Tensor-likes to check."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


def redispatch_function(func, types, args, kwargs):
    """Skip one level of ``__torch_function__`` dispatch and call the function: the override
    (or mode) that would intercept this call is skipped, the calls made inside ``func``
    are intercepted as usual."""
    FUNCTION_MODES.skip = True
    try:
        return func(*args, **(kwargs or {}))
    finally:
        FUNCTION_MODES.skip = False


@contextlib.contextmanager
def enable_reentrant_dispatch():
    """Re-enter dispatch from inside a handler.  ember's handlers already run under the
    modes below them (there is no thread-local snapshot to restore), so this only marks the
    block, as torch's does when nothing is saved."""
    yield


def is_tensor_like(inp):
    """Returns ``True`` if the passed-in input is a Tensor-like: a Tensor, or any object
    whose type has a ``__torch_function__`` (or ``__ember_function__``) attribute."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__") or \
        getattr(type(inp), "__ember_function__", None) is not None


# ---- function modes -----------------------------------------------------------------------

class _FunctionModeHook(DispatchMode):
    """On the dispatch stack while function modes are active: operators that reach the
    dispatcher without a public entry check (elementwise fast paths) are sent back to the
    nearest public function's override handling, which calls the top mode."""
    records_logical = False

    def __ember_dispatch__(self, op, args, kwargs):
        if FUNCTION_MODES.stack and not FUNCTION_MODES.skip:
            raise NeedsOverride(None)
        return op(*args, **kwargs)


def _push_mode(mode):
    if not FUNCTION_MODES.stack and not any(isinstance(m, _FunctionModeHook)
                                            for m in STATE.modes):
        _FunctionModeHook().__enter__()
    FUNCTION_MODES.stack.append(mode)
    SHARED.overrides += 1


def _pop_mode():
    mode = FUNCTION_MODES.stack.pop()
    SHARED.overrides -= 1
    if not FUNCTION_MODES.stack:
        for m in list(STATE.modes):
            if isinstance(m, _FunctionModeHook):
                m.__exit__(None, None, None)
    return mode


class TorchFunctionMode:
    """A ``TorchFunctionMode`` allows you to override the meaning of all
    ``__torch_function__`` overridable functions within a dynamic scope, without having to
    actually create a tensor subclass or manually monkey-patch functions in the PyTorch API.

    Modes are pushed onto a stack with ``with MyMode():``.  When you call functions in the
    API inside your ``__torch_function__`` implementation, they forward on to the next mode
    on the mode stack (then to the implementation)."""

    inner = None

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A `TorchFunctionMode` whose handler runs the function (subclass it to intercept some
    calls and pass the others on)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


# ---- what can be overridden ---------------------------------------------------------------

def _namespaces():
    from . import fft, linalg, special
    from .nn import functional
    # the root namespace is loaded whenever this module is (importing it is not layered)
    return {"torch": sys.modules[__name__.rpartition(".")[0]], "torch.nn.functional":
            functional, "torch.linalg": linalg, "torch.fft": fft, "torch.special": special}


def _is_overridable(f):
    # wrapped by `overridable`, marked as routing itself, or an operator's public function
    # (those of ember.ops route overrides by hand on their fast paths)
    return hasattr(f, "__wrapped_impl__") or getattr(f, "__ember_routes__", False) or \
        str(getattr(f, "__module__", "")).startswith("ember.ops")


@functools.lru_cache(maxsize=None)
def _walk():
    """(namespace -> overridable functions, function -> name, ignored functions)."""
    by_ns, names, ignored = {}, {}, set()
    for ns_name, mod in _namespaces().items():
        public = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
        for n in public:
            f = getattr(mod, n, None)
            if f is None or isinstance(f, (type, _types.ModuleType)) or not callable(f):
                continue
            if _is_overridable(f):
                by_ns.setdefault(mod, []).append(f)
                names.setdefault(f, f"{ns_name}.{n}")
            else:
                ignored.add(f)
    for n, f in vars(Tensor).items():
        if n.startswith("__") and not _is_overridable(f):
            continue  # Python protocol hooks that do not route (__repr__, __len__, ...)
        if callable(f) and not isinstance(f, (type, staticmethod, classmethod)):
            if _is_overridable(f):
                by_ns.setdefault(Tensor, []).append(f)
                names.setdefault(f, f"torch.Tensor.{n}")
            elif not n.startswith("_"):
                ignored.add(f)
    return by_ns, names, frozenset(ignored)


def get_overridable_functions():
    """List functions that are overridable via ``__torch_function__``: a dict from each
    namespace (the ember module, or ``Tensor`` for its methods) to its overridable
    functions."""
    return {k: list(v) for k, v in _walk()[0].items()}


def get_ignored_functions():
    """Return public functions that cannot be overridden by ``__torch_function__``: a set
    of functions that are publicly available but that are not overridable (they take no
    tensor-like, or answer about the object itself)."""
    return set(_walk()[2])


def resolve_name(f):
    """Get a human readable string name for a function passed to ``__torch_function__``
    (``"torch.add"``, ``"torch.Tensor.add"``, ``"torch.nn.functional.relu"``), or None."""
    return _walk()[1].get(f)


def is_tensor_method_or_property(func):
    """Returns True if the function passed in is a handler for a method or property
    belonging to ``Tensor``, as passed into ``__torch_function__`` (for properties, their
    ``__get__``)."""
    return func in _tensor_methods() or getattr(func, "__name__", None) == "__get__"


@functools.lru_cache(maxsize=None)
def _tensor_methods():
    return frozenset(f for f in vars(Tensor).values() if callable(f) and
                     not isinstance(f, (type, staticmethod, classmethod)))


def get_default_nowrap_functions():
    """Return public functions that do not wrap in a subclass when invoked by the default
    ``Tensor.__torch_function__`` that preserves subclasses (field accesses, whose identity
    users rely on: ``a.grad is a.grad``)."""
    found = (inspect.getattr_static(Tensor, n, None) for n in ("_base", "grad", "_grad"))
    return {d.__get__ for d in found if hasattr(d, "__get__") and not callable(d)}


def _dummy(f):
    def dummy(*args, **kwargs):
        return -1
    try:
        dummy.__signature__ = inspect.signature(f)
    except (TypeError, ValueError):
        pass
    dummy.__name__ = dummy.__qualname__ = getattr(f, "__name__", "dummy")
    return dummy


def get_testing_overrides():
    """Return a dict with dummy overrides for all overridable functions: each takes the
    function's arguments (same signature) and returns -1.  Useful for testing that a
    ``__torch_function__`` implementation covers the API."""
    return {f: _dummy(f) for fs in _walk()[0].values() for f in fs}
