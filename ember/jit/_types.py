"""The argument types of a scripted function, checked at each call as TorchScript does.

A parameter's type is its annotation; an unannotated parameter is a ``Tensor``
(``Optional[Tensor]`` with a ``None`` default, the default's type with another default),
as in torch.  A call with a value of another type raises torch's RuntimeError,
"Expected a value of type 'Tensor (inferred)' for argument 'y' but instead found type
'int'", with the position, the value and the declaration.
"""
import inspect
import typing

from .._core.tensor import Tensor

__all__ = ["Signature"]

_INFERRED = object()


def type_name(t):
    if t is Tensor or (isinstance(t, type) and issubclass(t, Tensor)):
        return "Tensor"
    if t is type(None) or t is None:
        return "NoneType"
    if t is typing.Any:
        return "Any"
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is typing.Union or type(t).__name__ == "UnionType":
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return f"Optional[{type_name(rest[0])}]"
        return f"Union[{', '.join(type_name(a) for a in args)}]"
    if origin in (list, tuple, dict):
        name = {list: "List", tuple: "Tuple", dict: "Dict"}[origin]
        return f"{name}[{', '.join('...' if a is Ellipsis else type_name(a) for a in args)}]"
    return getattr(t, "__name__", str(t))


def matches(v, t):
    """Whether value ``v`` has TorchScript type ``t``."""
    if t is typing.Any or isinstance(t, str):
        return True
    if t is None or t is type(None):
        return v is None
    if t is Tensor or (isinstance(t, type) and issubclass(t, Tensor)):
        return isinstance(v, Tensor)
    if t is bool:
        return isinstance(v, bool)
    if t is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if t is float:
        return isinstance(v, (float, int)) and not isinstance(v, bool)
    if t is complex:
        return isinstance(v, (complex, float, int)) and not isinstance(v, bool)
    if t is str:
        return isinstance(v, str)
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is typing.Union or type(t).__name__ == "UnionType":
        return any(matches(v, a) for a in args)
    if origin is list or t is list:
        return isinstance(v, list) and all(matches(x, args[0]) for x in v) if args else \
            isinstance(v, list)
    if origin is tuple or t is tuple:
        if not isinstance(v, tuple):
            return False
        if not args:
            return True
        if len(args) == 2 and args[1] is Ellipsis:
            return all(matches(x, args[0]) for x in v)
        return len(v) == len(args) and all(matches(x, a) for x, a in zip(v, args))
    if origin is dict or t is dict:
        if not isinstance(v, dict):
            return False
        if not args:
            return True
        return all(matches(k, args[0]) and matches(x, args[1]) for k, x in v.items())
    if str(origin) == "typing.Final":
        return matches(v, args[0]) if args else True
    if isinstance(t, type):
        return isinstance(v, t)
    return True


class Signature:
    """The parameters (after ``self``) of a scripted function, their types and defaults."""

    def __init__(self, fn, skip_self, typed=True):
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn) if typed else {}
        except Exception:  # forward references TorchScript would resolve itself
            hints = {}
        params = list(sig.parameters.values())
        if skip_self:
            params = params[1:]
        self.varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        params = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.fn_name = fn.__name__
        self.names = [p.name for p in params]
        self.defaults = {p.name: p.default for p in params if p.default is not p.empty}
        self.types = []
        self.inferred = []
        for p in params:
            if not typed:  # ember's own modules: their forward checks its inputs itself
                self.types.append(typing.Any)
                self.inferred.append(False)
            elif p.name in hints:
                self.types.append(hints[p.name])
                self.inferred.append(False)
            elif p.default is p.empty or isinstance(p.default, Tensor):
                self.types.append(Tensor)
                self.inferred.append(True)
            elif p.default is None:
                self.types.append(typing.Optional[Tensor])
                self.inferred.append(True)
            else:
                self.types.append(type(p.default))
                self.inferred.append(True)
        ret = hints.get("return", _INFERRED)
        self.return_type = ret

    def infer_from(self, example):
        """Unannotated parameters take the types of ``example``'s values."""
        for i, v in enumerate(example[:len(self.names)]):
            if self.inferred[i] and self.types[i] is not typing.Any:
                self.types[i] = Tensor if isinstance(v, Tensor) else type(v)

    def check_return(self, out):
        """The value returned, checked against the return annotation as TorchScript's
        interpreter does: a 0-dim tensor where ``int``/``float``/``bool`` is annotated
        becomes that scalar, another tensor raises; any other mismatch raises."""
        t = self.return_type
        if t is _INFERRED or matches(out, t):
            return out
        if t in (int, float, bool) and isinstance(out, Tensor):
            if out.dim() != 0:
                raise RuntimeError(f"{self.fn_name}(): Cannot input a tensor of dimension other "
                                   f"than 0 as a scalar argument (the return value is "
                                   f"annotated {t.__name__})")
            if t is int and (out.dtype.is_floating_point or out.dtype.is_complex):
                name = {"float32": "Float", "float64": "Double", "float16": "Half",
                        "bfloat16": "BFloat16"}.get(out.dtype.name, out.dtype.name)
                raise RuntimeError(f"{self.fn_name}(): Cannot input a tensor of type {name} as "
                                   f"an integral argument (the return value is annotated int)")
            return t(out.item())
        raise RuntimeError(f"{self.fn_name}(): Return value was annotated as having type "
                           f"{type_name(t)} but is actually of type {type(out).__name__}")

    def declaration(self):
        args = ", ".join(f"{type_name(t)} {n}" for n, t in zip(self.names, self.types))
        ret = "Tensor" if self.return_type is _INFERRED else type_name(self.return_type)
        return f"{self.fn_name}({args}) -> {ret}"

    def bind(self, args, kwargs):
        """The full positional argument tuple of a call, type-checked."""
        if len(args) > len(self.names) and not self.varargs:
            raise RuntimeError(f"{self.fn_name}() expected at most {len(self.names)} "
                               f"argument(s) but received {len(args)} argument(s). "
                               f"Declaration: {self.declaration()}")
        args = list(args)
        for n in self.names[len(args):]:
            if n in kwargs:
                args.append(kwargs.pop(n))
            elif n in self.defaults:
                args.append(self.defaults[n])
            else:
                raise RuntimeError(f"{self.fn_name}() is missing value for argument '{n}'. "
                                   f"Declaration: {self.declaration()}")
        if kwargs:
            raise RuntimeError(f"{self.fn_name}() got unexpected keyword argument(s) "
                               f"{sorted(kwargs)}. Declaration: {self.declaration()}")
        # (extra *args, which only ember's own modules take, are passed unchecked)
        for i, (v, n, t, inf) in enumerate(zip(args, self.names, self.types, self.inferred)):
            if not matches(v, t):
                tn = type_name(t)
                extra = (f"\nInferred '{n}' to be of type '{tn}' because it was not annotated "
                         f"with an explicit type.") if inf else ""
                raise RuntimeError(
                    f"{self.fn_name}() Expected a value of type '{tn}{' (inferred)' if inf else ''}"
                    f"' for argument '{n}' but instead found type '{type(v).__name__}'.{extra}"
                    f"\nPosition: {i}\nValue: {v!r}\n"
                    f"Declaration: {self.declaration()}\nCast error details: Unable to cast "
                    f"{v!r} to {tn}")
        return tuple(args)

