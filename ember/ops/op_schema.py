"""Operator schemas in torch's text form: ``ns::name.overload(Tensor self) -> Tensor``.

`parse_schema` reads the signature language of torch's ``native_functions.yaml`` (the
form ``torch.library.define`` and ``custom_op(schema=...)`` take) into a `FunctionSchema`
with torch's attribute names (``name``, ``overload_name``, ``arguments``, ``returns``,
``is_mutable``); ``str(schema)`` prints it back.  Aliasing annotations (``Tensor(a!)``) mark
arguments written in place: ``is_write`` on the argument, ``is_mutable`` on the schema.
"""
import re

__all__ = ["Argument", "FunctionSchema", "AliasInfo", "parse_schema"]


class AliasInfo:
    """The ``(a!)`` of ``Tensor(a!)``: the alias set and whether the op writes it."""
    __slots__ = ("before_set", "is_write")

    def __init__(self, name, is_write):
        self.before_set = {name}
        self.is_write = is_write

    def __str__(self):
        return f"({next(iter(self.before_set))}{'!' if self.is_write else ''})"


_NO_DEFAULT = object()


class Argument:
    """One argument (or return) of a schema: ``type`` is the schema type text without the
    alias annotation (``Tensor``, ``Tensor?``, ``int[]``, ``SymInt[2]``, ``Scalar``...)."""
    __slots__ = ("name", "type", "default_value", "kwarg_only", "alias_info", "_has_default")

    def __init__(self, name, type, default_value=_NO_DEFAULT, kwarg_only=False, alias_info=None):
        self.name = name
        self.type = type
        self._has_default = default_value is not _NO_DEFAULT
        self.default_value = default_value if self._has_default else None
        self.kwarg_only = kwarg_only
        self.alias_info = alias_info

    def has_default_value(self):
        return self._has_default

    @property
    def is_write(self):
        return self.alias_info is not None and self.alias_info.is_write

    @property
    def is_out(self):
        return self.is_write and self.kwarg_only

    @property
    def is_tensor(self):
        """A Tensor or an optional Tensor (one tensor or None)."""
        return self.type in ("Tensor", "Tensor?")

    @property
    def is_tensor_list(self):
        return self.type in ("Tensor[]", "Tensor?[]")

    def __str__(self):
        t = self.type
        if self.alias_info is not None:  # the annotation sits before a trailing ? or []
            base, suffix = re.match(r"^(\w+)(.*)$", t).groups()
            t = f"{base}{self.alias_info}{suffix}"
        s = f"{t} {self.name}" if self.name else t
        if self._has_default:
            s += "=" + _format_default(self.default_value)
        return s

    def __repr__(self):
        return f"Argument({self})"


class FunctionSchema:
    """A parsed operator schema (torch's ``FunctionSchema``)."""
    __slots__ = ("name", "overload_name", "arguments", "returns")

    def __init__(self, name, overload_name, arguments, returns):
        self.name = name
        self.overload_name = overload_name
        self.arguments = arguments
        self.returns = returns

    @property
    def is_mutable(self):
        """Whether the op writes any of its arguments (in-place and ``out=`` overloads)."""
        return any(a.is_write for a in self.arguments)

    def __str__(self):
        args, seen_kw = [], False
        for a in self.arguments:
            if a.kwarg_only and not seen_kw:
                args.append("*")
                seen_kw = True
            args.append(str(a))
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        if len(self.returns) == 1 and not self.returns[0].name:
            rets = str(self.returns[0])
        else:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{name}({', '.join(args)}) -> {rets}"

    def __repr__(self):
        return str(self)

    def __eq__(self, other):
        return isinstance(other, FunctionSchema) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


def _format_default(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_format_default(x) for x in v) + "]"
    if isinstance(v, str) and not re.match(r"^[A-Za-z_]\w*$", v):
        return repr(v).replace("'", '"')
    return str(v)


# a type: base name, optional alias annotation ``(a)``/``(a!)``/``(a->*)``, then ``?``/``[n]``
_TYPE = re.compile(r"^(?P<base>[A-Za-z_]\w*)(?:\((?P<alias>\w+)(?:->\*)?(?P<bang>!?)\))?"
                   r"(?P<suffix>(?:\?|\[\d*\])*\??)$")


def _split_top(text, sep=","):
    """Split at ``sep`` outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, [], None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_default(text):
    text = text.strip()
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("[") and text.endswith("]"):
        return [_parse_default(x) for x in _split_top(text[1:-1])]
    if text[:1] in "\"'":
        return text[1:-1]
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text  # an enum name torch writes bare: contiguous_format, Mean, ...


def _parse_argument(text, kwarg_only, schema_text, is_return=False):
    default = _NO_DEFAULT
    if "=" in text and not is_return:
        text, d = text.split("=", 1)
        default = _parse_default(d)
    words = text.split()
    if len(words) == 1 and is_return:
        type_text, name = words[0], ""
    elif len(words) == 2:
        type_text, name = words
    else:
        raise RuntimeError(f"invalid argument {text!r} in schema {schema_text!r}: expected "
                           f"'Type name' (e.g. 'Tensor self')")
    m = _TYPE.match(type_text)
    if m is None:
        raise RuntimeError(f"invalid type {type_text!r} in schema {schema_text!r}")
    alias = AliasInfo(m["alias"], bool(m["bang"])) if m["alias"] else None
    return Argument(name, m["base"] + m["suffix"], default, kwarg_only, alias)


def parse_schema(text, qualified_name=None):
    """Parse ``text``: a full schema (``ns::name.overload(args) -> returns``) or, with
    ``qualified_name``, just its ``(args) -> returns`` part (what ``custom_op(schema=)``
    takes).  Raises RuntimeError naming the schema when it cannot be read."""
    text = " ".join(text.split()).replace(" -> *)", "->*)")  # Tensor(a -> *): one word
    if qualified_name is not None and text.startswith("("):
        text = qualified_name + text
    m = re.match(r"^(?P<name>[\w:]+)(?:\.(?P<overload>\w+))?\((?P<args>.*)\)\s*->\s*(?P<rets>.+)$",
                 text)
    if m is None:
        raise RuntimeError(f"invalid schema {text!r}: expected 'name(Type arg, ...) -> Type' "
                           f"(torch's schema language)")
    args, kwarg_only = [], False
    for part in _split_top(m["args"]):
        if part == "*":
            kwarg_only = True
            continue
        args.append(_parse_argument(part, kwarg_only, text))
    rets_text = m["rets"].strip()
    if rets_text.startswith("(") and rets_text.endswith(")"):
        rets = [_parse_argument(p, False, text, True) for p in _split_top(rets_text[1:-1])]
    else:
        rets = [_parse_argument(rets_text, False, text, True)]
    return FunctionSchema(m["name"], m["overload"] or "", args, rets)
