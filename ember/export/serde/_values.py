"""Literal values of a program file: dtypes, symbolic sizes, and the tagged JSON encoding
of node arguments and metadata (see the package docstring for the table of tags)."""
import ast
import math

import numpy as np

from ..._core import dtype as _dt
from ..._core.meta import TensorMeta
from ..._dynamo.symbolic import SymInt

__all__ = ["dtype_name", "np_dtype_from_name", "ember_dtype_from_name", "check_expr",
           "eval_expr", "encode_size", "encode_meta", "decode_meta", "encode_value",
           "decode_value"]

# every dtype ember has, by the NumPy / ml_dtypes name it is stored under
_BY_NAME = {d.name: d for d in _dt.ALL}  # (ember's names are NumPy's)


def dtype_name(dt):
    """The file's name of an ember or NumPy dtype ("float32", "bfloat16", ...)."""
    npdt = np.dtype(dt.np if isinstance(dt, _dt.dtype) else dt)
    if npdt.name not in _BY_NAME:
        raise ValueError(f"ember.export.save: dtype {dt} has no program-file encoding")
    return npdt.name


def ember_dtype_from_name(name, where):
    if not isinstance(name, str) or name not in _BY_NAME:
        raise ValueError(f"{where}: unknown dtype {name!r} (known: {sorted(_BY_NAME)})")
    return _BY_NAME[name]


def np_dtype_from_name(name, where):
    return np.dtype(ember_dtype_from_name(name, where).np)


# ---- symbolic sizes: strings over s0, s1, ... with + - * // % and max/min ----------
_ALLOWED_BIN = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: a // b,
                ast.Mod: lambda a, b: a % b}
_CALLS = {"max": max, "min": min}   # ``max(s0, s1)``: ember.sym_max of two sizes


def _eval_node(node, env, text):
    if isinstance(node, ast.Expression):
        return _eval_node(node.body, env, text)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if env is None:
            return 0
        if node.id not in env:
            raise ValueError(f"size expression {text!r} names an unknown symbol {node.id!r}")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _ALLOWED_BIN:
        a, b = _eval_node(node.left, env, text), _eval_node(node.right, env, text)
        if env is None:
            return 0
        return _ALLOWED_BIN[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval_node(node.operand, env, text)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in _CALLS and len(node.args) == 2 and not node.keywords:
        a, b = (_eval_node(x, env, text) for x in node.args)
        return _CALLS[node.func.id](a, b)
    raise ValueError(f"size expression {text!r}: only integers, symbols, + - * // % and "
                     f"max/min of two are allowed")


def _parse(text):
    if not isinstance(text, str) or len(text) > 1000:
        raise ValueError(f"size expression {text!r} is not a short string")
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"size expression {text!r} is not valid syntax") from None


def check_expr(text):
    """Validate a size expression (parsed with ``ast``, never evaluated as code)."""
    _eval_node(_parse(text), None, text)
    return text


def eval_expr(text, env):
    """The value of a size expression with the symbols bound in ``env``."""
    return _eval_node(_parse(text), env, text)


def encode_size(s):
    expr = getattr(s, "expr", None)
    if isinstance(s, SymInt) and isinstance(expr, str):
        return expr
    return int(s)


def _decode_size(s, hints, where):
    if type(s) is int:
        return s
    if isinstance(s, str):
        check_expr(s)
        try:
            hint = eval_expr(s, hints)
        except (ValueError, ZeroDivisionError):  # a symbol only a sub-graph binds
            hint = 2
        return SymInt(hint, s)
    raise ValueError(f"{where}: a size must be an int or an expression string, got {s!r}")


def encode_meta(val):
    if isinstance(val, TensorMeta):
        return {"shape": [encode_size(s) for s in val.shape], "dtype": dtype_name(val.dtype)}
    if isinstance(val, (tuple, list)):
        return [encode_meta(v) for v in val]
    return None


def decode_meta(obj, hints, where):
    if obj is None:
        return None
    if isinstance(obj, dict) and set(obj) == {"int"}:  # a size placeholder of a sub-graph
        return _decode_size(obj["int"], hints, where)
    if isinstance(obj, list):
        return tuple(decode_meta(v, hints, where) for v in obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("shape"), list):
        raise ValueError(f"{where}: malformed tensor metadata {obj!r}")
    return TensorMeta(tuple(_decode_size(s, hints, where) for s in obj["shape"]),
                      ember_dtype_from_name(obj.get("dtype"), where))


def _device_type():
    from ..._core.device import device
    return device


# ---- arguments ----------------------------------------------------------------------------
def _encode_float(x):
    if math.isfinite(x):
        return x
    return {"float": repr(x)}  # 'inf', '-inf', 'nan'


def encode_value(v, node_name, ctx=None):
    """``node_name(v)`` gives the name of an fx Node or None for other values; ``ctx``
    (optional) encodes what needs the file: ``ctx.array(ndarray)`` stores a NumPy array
    literal (decompositions' index tables) and gives its storage entry,
    ``ctx.subgraph(sub)`` gives the JSON of a higher-order op's `Subgraph`."""
    name = node_name(v)
    if name is not None:
        return {"node": name}
    if v is None or type(v) in (bool, str):
        return v
    if isinstance(v, SymInt) and isinstance(getattr(v, "expr", None), str):
        return {"sym": v.expr}
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (float, np.floating)):
        return _encode_float(float(v))
    if isinstance(v, (complex, np.complexfloating)):
        return {"complex": [_encode_float(v.real), _encode_float(v.imag)]}
    if isinstance(v, tuple):
        return {"tuple": [encode_value(x, node_name, ctx) for x in v]}
    if isinstance(v, list):
        return [encode_value(x, node_name, ctx) for x in v]
    if isinstance(v, _dt.dtype):
        return {"dtype": dtype_name(v)}
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return {"np_dtype": dtype_name(v)}
    if isinstance(v, slice):
        return {"slice": [encode_value(x, node_name, ctx) for x in (v.start, v.stop,
                                                                      v.step)]}
    if v is Ellipsis:
        return {"ellipsis": True}
    if isinstance(v, np.ndarray) and ctx is not None:
        return {"array": ctx.array(v)}
    if type(v).__name__ == "Subgraph" and ctx is not None:
        return {"subgraph": ctx.subgraph(v)}
    if isinstance(v, _device_type()):
        return {"device": str(v)}
    if isinstance(v, type) and _is_autograd_function(v):
        raise ValueError(f"ember.export.save: the program calls the custom autograd.Function "
                         f"{v.__qualname__}, whose forward and backward are Python: a program "
                         f"file holds ember ops only (write the forward in ember ops, or "
                         f"export it as ember.library custom op)")
    raise ValueError(f"ember.export.save: cannot encode the argument {v!r} "
                     f"({type(v).__name__}) in a program file")


def _is_autograd_function(cls):
    from ...autograd.function import Function
    return issubclass(cls, Function)


def _decode_float(x, where):
    if isinstance(x, (int, float)) and type(x) is not bool:
        return float(x)
    if isinstance(x, dict) and x.get("float") in ("inf", "-inf", "nan"):
        return float(x["float"])
    raise ValueError(f"{where}: malformed float {x!r}")


def decode_value(v, nodes, hints, where, ctx=None):
    """The inverse of `encode_value`; ``nodes`` maps names to the Nodes built so far,
    ``ctx.array(entry)`` reads an array literal, ``ctx.subgraph(nodes, where)`` builds a
    Subgraph."""
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, list):
        return [decode_value(x, nodes, hints, where, ctx) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise ValueError(f"{where}: malformed argument {v!r}")
    (tag, body), = v.items()
    if tag == "node":
        if body not in nodes:
            raise ValueError(f"{where}: argument names node {body!r}, which is not defined "
                             f"before it")
        return nodes[body]
    if tag == "float":
        return _decode_float(v, where)
    if tag == "complex" and isinstance(body, list) and len(body) == 2:
        return complex(_decode_float(body[0], where), _decode_float(body[1], where))
    if tag == "tuple" and isinstance(body, list):
        return tuple(decode_value(x, nodes, hints, where, ctx) for x in body)
    if tag == "dtype":
        return ember_dtype_from_name(body, where)
    if tag == "np_dtype":
        return np_dtype_from_name(body, where)
    if tag == "sym":
        return _decode_size(body, hints, where)
    if tag == "slice" and isinstance(body, list) and len(body) == 3:
        return slice(*(decode_value(x, nodes, hints, where, ctx) for x in body))
    if tag == "ellipsis":
        return Ellipsis
    if tag == "array" and ctx is not None:
        return ctx.array(body)
    if tag == "subgraph" and ctx is not None:
        return ctx.subgraph(body, where)
    if tag == "device" and isinstance(body, str):
        try:
            return _device_type()(body)
        except (RuntimeError, ValueError, TypeError) as e:
            raise ValueError(f"{where}: unknown device {body!r} ({e})") from None
    raise ValueError(f"{where}: unknown argument tag {tag!r}")
