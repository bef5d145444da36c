"""`infer_schema`: an operator schema from a Python function's type annotations."""
import inspect
import numbers
import types
import typing
from collections.abc import Sequence

from .._core.device import device as _device
from .._core.dtype import dtype as _dtype
from .._core.tensor import Tensor

__all__ = ["infer_schema", "qualname_parts"]


def _schema_type(ann, what):
    """The schema type text of annotation ``ann`` (``what`` names it in errors)."""
    optional = False
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        optional = len(members) < len(typing.get_args(ann))
        if len(members) == 1:
            ann, origin = members[0], typing.get_origin(members[0])
        elif set(members) <= {int, float, bool, complex}:
            return "Scalar?" if optional else "Scalar"
        else:
            raise ValueError(f"infer_schema(func): {what} has unsupported type {ann}")
    base = None
    if ann is Tensor:
        base = "Tensor"
    elif ann is int:
        base = "SymInt"
    elif ann is float:
        base = "float"
    elif ann is bool:
        base = "bool"
    elif ann is str:
        base = "str"
    elif ann is _dtype:
        base = "ScalarType"
    elif ann is _device:
        base = "Device"
    elif ann is numbers.Number:
        base = "Scalar"
    elif origin in (list, tuple, Sequence, typing.Sequence) or ann in (list, tuple):
        args = [a for a in typing.get_args(ann) if a is not Ellipsis]
        if len(args) == 1:
            inner = _schema_type(args[0], what)
            if not inner.endswith("?") or inner == "Tensor?":
                base = inner + "[]"
    if base is None:
        raise ValueError(f"infer_schema(func): {what} has unsupported type {ann}. The valid "
                         f"types are: Tensor, int, float, bool, str, dtype, device, "
                         f"Sequence/list of Tensor, int, float or bool, and Optional of these")
    return base + "?" if optional else base


def _return_type(ann):
    if ann is None or ann is type(None):
        return "()"
    if typing.get_origin(ann) is tuple:
        return "(" + ", ".join(_schema_type(a, "the return") for a in typing.get_args(ann)) + ")"
    return _schema_type(ann, "the return")


def _default_text(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_default_text(x) for x in v) + "]"
    raise ValueError(f"infer_schema(func): unsupported default value {v!r}")


def _hints(fn):
    try:
        return typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - unresolvable string annotations: read them raw
        return dict(getattr(fn, "__annotations__", {}))


def infer_schema(prototype_function, /, *, mutates_args, op_name=None, tags=()):
    """Parses the schema of a given function with type hints (torch.library.infer_schema).

    ``mutates_args`` names the arguments written in place (``"unknown"``: every Tensor
    argument may be); they get an alias annotation ``Tensor(a0!)``.  Returns the schema
    text, ``"(Tensor x) -> Tensor"``, prefixed by ``op_name`` when given."""
    sig = inspect.signature(prototype_function)
    hints = _hints(prototype_function)
    names = list(sig.parameters)
    if mutates_args != "unknown":
        mutates_args = {mutates_args} if isinstance(mutates_args, str) else set(mutates_args)
        extra = mutates_args - set(names)
        if extra:
            raise ValueError(f"infer_schema(func): mutates_args contains {sorted(extra)} that "
                             f"are not in the function's arguments {names}")
    parts, n_alias, kw = [], 0, False
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): We do not support positional-only args, "
                             f"varargs, or varkwargs. Got func with signature {sig})")
        if name not in hints:
            raise ValueError(f"infer_schema(func): Parameter {name} must have a type "
                             f"annotation. Got func with signature {sig})")
        t = _schema_type(hints[name], f"Parameter {name}")
        mutated = mutates_args == "unknown" and t.startswith("Tensor") or \
            mutates_args != "unknown" and name in mutates_args
        if mutated:
            if not t.startswith("Tensor"):
                raise ValueError(f"infer_schema(func): Parameter {name} is in mutable_args but "
                                 f"only Tensors or collections of Tensors can be mutated")
            t = f"Tensor(a{n_alias}!){t[len('Tensor'):]}"
            n_alias += 1
        if p.kind is p.KEYWORD_ONLY and not kw:
            parts.append("*")
            kw = True
        text = f"{t} {name}"
        if p.default is not p.empty:
            text += "=" + _default_text(p.default)
        parts.append(text)
    if "return" not in hints and sig.return_annotation is inspect.Signature.empty:
        raise ValueError(f"infer_schema(func): No return type annotation was provided. Please "
                         f"add one. Got func with signature {sig})")
    rets = _return_type(hints.get("return", sig.return_annotation))
    prefix = op_name or ""
    return f"{prefix}({', '.join(parts)}) -> {rets}"


def qualname_parts(qualname):
    """``("ns", "name")`` of ``"ns::name"``; ValueError naming it otherwise."""
    ns, sep, name = qualname.partition("::")
    if not sep or not ns or not name or "::" in name:
        raise ValueError(f"Expected there to be a namespace in {qualname}, i.e. The operator "
                         f"name should look something like ns::foo")
    if not ns.isidentifier() or not name.replace(".", "_").isidentifier():
        raise ValueError(f"invalid operator name {qualname!r}: the namespace and name must be "
                         f"Python identifiers")
    return ns, name
