"""Matching a call's arguments to its target's signature (``torch.fx.operator_schemas``):
`normalize_function` / `normalize_module` return the arguments in the target's parameter
order with defaults filled in, as `Node.normalized_arguments` reports them."""
import inspect
from typing import Any, NamedTuple

__all__ = ["ArgsKwargsPair", "normalize_function", "normalize_module"]


class ArgsKwargsPair(NamedTuple):
    """Positional and keyword arguments of a call, normalized to the target's signature."""
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


_SUPPORTED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _normalize(sig, args, kwargs, normalize_to_only_use_kwargs):
    """The leading positional arguments the call site passed stay positional (unless
    ``normalize_to_only_use_kwargs``); every other parameter, defaults included, becomes a
    keyword.  None for signatures with positional-only or variadic parameters."""
    if any(p.kind not in _SUPPORTED for p in sig.parameters.values()):
        return None
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    new_args, new_kwargs = [], {}
    for i, name in enumerate(sig.parameters):
        if not normalize_to_only_use_kwargs and i < len(args):
            new_args.append(bound.arguments[name])
        else:
            new_kwargs[name] = bound.arguments[name]
    return ArgsKwargsPair(tuple(new_args), new_kwargs)


def _signature(fn):
    try:
        return inspect.signature(inspect.unwrap(fn))
    except (TypeError, ValueError):
        return None


def normalize_function(target, args, kwargs=None, arg_types=None, kwarg_types=None,
                       normalize_to_only_use_kwargs=False):
    """``target(*args, **kwargs)``'s arguments matched to ``target``'s signature, or None
    when it cannot be read.  ember's functions have one Python signature each, so the
    ``arg_types``/``kwarg_types`` that pick among torch's overloads are not needed."""
    sig = _signature(target)
    if sig is None:
        return None
    return _normalize(sig, tuple(args), dict(kwargs or {}), normalize_to_only_use_kwargs)


def normalize_module(root, target, args, kwargs=None, normalize_to_only_use_kwargs=False):
    """The arguments of a call to submodule ``target`` of ``root`` matched to its
    ``forward``; only ember.nn's own module classes are normalized (None otherwise)."""
    from .. import nn
    try:
        submod = root.get_submodule(target)
    except AttributeError as e:
        raise RuntimeError(f"Tried to normalize node with target {target} but root did not "
                           f"have that target!") from e
    cls = type(submod)
    if getattr(nn, cls.__name__, None) is not cls:
        return None
    sig = _signature(submod.forward)
    if sig is None:
        return None
    return _normalize(sig, tuple(args), dict(kwargs or {}), normalize_to_only_use_kwargs)
