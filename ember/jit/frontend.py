"""The TorchScript language subset ``jit.script`` accepts, checked on the source's AST.

``check_function(fn)`` parses the function's source and raises `NotSupportedError` (torch's
``torch.jit.frontend.NotSupportedError``) at the first construct outside the subset,
naming it with ``File "...", line N`` and the offending line, as torch does:

- generators (``yield``), ``async``/``await``;
- ``try``/``except``/``finally``, ``global``/``nonlocal``, ``import`` inside the function;
- lambdas, nested ``def`` and ``class`` definitions, ``match``, the walrus ``:=``, set
  literals and comprehensions, dict expansion ``{**d}``;
- ``*args``/``**kwargs`` and keyword-only arguments in the signature, ``f(**kw)`` in calls,
  starred expressions (``f(*xs)``, ``[*xs]``, ``a, *b = xs``: a `CompilationError`, a
  RuntimeError as torch's);
- ``else`` branches of ``for``/``while`` loops;
- type annotations TorchScript has no type for (``set``, arbitrary classes): a
  `UnknownTypeError`, a RuntimeError as torch's is.

Everything else of Python that real models write is accepted: type annotations with
``List``/``Dict``/``Tuple``/``Optional`` (and their builtin spellings), ``if``/``for``/
``while`` on tensors and scalars, ``with`` (``no_grad``), ``assert``, ``raise``, comprehensions
over lists and dicts, calls into submodules.
"""
import ast
import inspect
import textwrap

__all__ = ["NotSupportedError", "UnsupportedNodeError", "UnknownTypeError", "CompilationError",
           "FrontendError", "parse_function", "check_function", "check_annotation"]


class FrontendError(Exception):
    """An error of the TorchScript frontend, located in the source (torch's base class)."""

    def __init__(self, source_range, msg):
        self.source_range = source_range
        self.msg = msg
        super().__init__(f"{msg}:\n{source_range}" if source_range else msg)


class NotSupportedError(FrontendError):
    """A construct outside the TorchScript subset (torch.jit.frontend.NotSupportedError)."""


class UnsupportedNodeError(NotSupportedError):
    """An AST node kind TorchScript does not support (torch's name)."""


class CompilationError(FrontendError, RuntimeError):
    """A construct TorchScript's compiler rejects with a RuntimeError (as torch does):
    starred expressions whose length it cannot infer."""


class UnknownTypeError(CompilationError):
    """A type annotation TorchScript has no type for (torch raises a RuntimeError)."""


class SourceRange:
    """Where a node is: file, line, and the line's text with a marker under it."""

    def __init__(self, filename, lineno, col, text):
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.text = text

    def __str__(self):
        marker = " " * self.col + "~~~ <--- HERE"
        return f'  File "{self.filename}", line {self.lineno}\n{self.text}\n{marker}'


class ParsedFunction:
    """A function's AST (its ``def`` node), with what is needed to report locations."""

    def __init__(self, fn, tree, filename, first_line, lines, indent):
        self.fn = fn
        self.tree = tree
        self.filename = filename
        self.first_line = first_line  # the file's line number of the source's first line
        self.lines = lines
        self.indent = indent

    def where(self, node):
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return SourceRange(self.filename, self.first_line + line - 1,
                           getattr(node, "col_offset", 0) + self.indent, text)


def parse_function(fn):
    """The `ParsedFunction` of ``fn``; OSError's message names the function if its source is
    unavailable (a function typed at the REPL)."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise OSError(f"jit.script needs the source code of {getattr(fn, '__qualname__', fn)!r} "
                      f"to compile it, and it is not available ({e})") from None
    src = "".join(lines)
    dedented = textwrap.dedent(src)
    indent = len(src.splitlines()[0]) - len(dedented.splitlines()[0])
    tree = ast.parse(dedented)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise NotSupportedError(None, f"jit.script expects a function definition for "
                                      f"{getattr(fn, '__qualname__', fn)!r}")
    filename = inspect.getsourcefile(fn) or "<unknown>"
    return ParsedFunction(fn, fdef, filename, first_line, [l.rstrip("\n") for l in
                                                           dedented.splitlines()], indent)


_NODE_MESSAGES = {
    ast.Try: "try blocks aren't supported",
    ast.Global: "global variables aren't supported",
    ast.Nonlocal: "nonlocal variables aren't supported",
    ast.Import: "import statements aren't supported",
    ast.ImportFrom: "import statements aren't supported",
    ast.Lambda: "Lambda aren't supported",
    ast.ClassDef: "class definitions aren't supported",
    ast.Yield: "yield statements aren't supported (generators cannot be compiled)",
    ast.YieldFrom: "yield statements aren't supported (generators cannot be compiled)",
    ast.Await: "await expressions aren't supported",
    ast.AsyncFunctionDef: "async functions aren't supported",
    ast.AsyncFor: "async for loops aren't supported",
    ast.AsyncWith: "async with statements aren't supported",
    ast.NamedExpr: "assignment expressions (:=) aren't supported",
    ast.Set: "set literals aren't supported",
    ast.Match: "Match aren't supported",
    ast.SetComp: "set comprehensions aren't supported",
}
if hasattr(ast, "TryStar"):
    _NODE_MESSAGES[ast.TryStar] = "try blocks aren't supported"


class _Checker(ast.NodeVisitor):
    def __init__(self, parsed):
        self.parsed = parsed

    def fail(self, node, msg, cls=NotSupportedError):
        raise cls(self.parsed.where(node), msg)

    def generic_visit(self, node):
        msg = _NODE_MESSAGES.get(type(node))
        if msg is not None:
            self.fail(node, msg, UnsupportedNodeError)
        super().generic_visit(node)

    def visit_FunctionDef(self, node):
        if node is not self.parsed.tree:
            self.fail(node, "function definitions aren't supported", UnsupportedNodeError)
        a = node.args
        if a.vararg is not None or a.kwarg is not None:
            star = a.vararg or a.kwarg
            self.fail(star, "Compiled functions can't take variable number of arguments or "
                            "use keyword-only arguments with defaults")
        if a.kwonlyargs:
            self.fail(a.kwonlyargs[0], "Compiled functions can't take variable number of "
                                       "arguments or use keyword-only arguments with defaults")
        for arg in a.posonlyargs + a.args:
            if arg.annotation is not None:
                self._check_annotation_node(arg.annotation)
        if node.returns is not None:
            self._check_annotation_node(node.returns)
        for stmt in node.body:
            self.visit(stmt)

    def visit_For(self, node):
        if node.orelse:
            self.fail(node, "else branches of for loops aren't supported")
        self.generic_visit(node)

    def visit_While(self, node):
        if node.orelse:
            self.fail(node, "else branches of while loops aren't supported")
        self.generic_visit(node)

    def visit_Starred(self, node):
        self.fail(node, "cannot statically infer the expected size of a list in this context "
                        "(starred expressions *xs are not supported)", CompilationError)

    def visit_Dict(self, node):
        for k, v in zip(node.keys, node.values):
            if k is None:
                self.fail(v, "Dict expansion (e.g. `{**dict}`) is not supported")
        self.generic_visit(node)

    def visit_Call(self, node):
        for k in node.keywords:
            if k.arg is None:
                self.fail(k.value, "keyword-arg expansion (f(**kwargs)) is not supported")
        self.generic_visit(node)

    def _check_annotation_node(self, ann):
        try:
            value = eval(compile(ast.Expression(ann), "<annotation>", "eval"),
                         self.parsed.fn.__globals__)
        except Exception:  # an annotation written as a string TorchScript parses itself
            return
        if not check_annotation(value):
            self.fail(ann, f"Unknown type name '{ast.unparse(ann)}' (TorchScript types are "
                           f"Tensor, int, float, bool, str, None, List, Dict, Tuple, Optional, "
                           f"and modules)", UnknownTypeError)


def check_annotation(t):
    """Whether ``t`` is a type TorchScript has (see the module docstring)."""
    import typing
    from .._core.tensor import Tensor
    from ..nn.modules.module import Module
    if t is None or t is type(None) or t is typing.Any:
        return True
    if isinstance(t, str):
        return True
    if isinstance(t, type):
        if t in (int, float, bool, str, complex, list, dict, tuple) or issubclass(t, Tensor) \
                or issubclass(t, Module):
            return True
        return t.__module__.startswith(("ember", "numpy")) and t.__name__ in ("device", "dtype")
    origin = typing.get_origin(t)
    if origin in (list, dict, tuple, typing.Union) or str(origin) == "typing.Final":
        return all(check_annotation(a) for a in typing.get_args(t) if a is not Ellipsis)
    if getattr(t, "__module__", "") == "types" and type(t).__name__ == "UnionType":
        return all(check_annotation(a) for a in typing.get_args(t))
    return False


def check_function(fn):
    """Parse ``fn`` and check it is in the TorchScript subset; its `ParsedFunction`."""
    parsed = parse_function(fn)
    _Checker(parsed).visit(parsed.tree)
    return parsed
