"""What the loop generator can do with each node: the vocabulary of the fuse pass.

``pointwise``: one element of the output from one element of each input (scalar-function
table entries with a C form for their compute dtype, casts, constants, iota) or from an
affinely indexed element (movement: expand, permute, slice, select, flip, view);
``reduction``: sum/prod/amax/amin/any/all over some dims; ``eager``: everything else (extern
library calls, ops without a loop form, unsupported dtypes) runs its eager kernel."""
import numpy as np

from ..._core import dtype as _dt
from ..._core import scalar_functions as _sf
from ..._core.meta import TensorMeta
from ..._core.op import Op

__all__ = ["LOADABLE", "compute_name", "kind_of", "reduction_dims", "REDUCTIONS", "MOVEMENT",
           "scalar_compute", "is_node"]

LOADABLE = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float16", "bfloat16", "float32", "float64"}
HALVES = {"float16", "bfloat16"}
REDUCTIONS = {"sum", "prod", "amax", "amin", "any", "all"}
MOVEMENT = {"view", "_reshape_copy", "expand", "permute", "slice", "select", "_index_view",
            "flip", "_stop_gradient"}


def is_node(a):
    return hasattr(a, "op") and hasattr(a, "users")


def compute_name(dt):
    """The dtype name a value of ember dtype ``dt`` computes in (halves: float32)."""
    return "float32" if dt.name in HALVES else dt.name


def _meta(n):
    v = n.meta.get("val") if is_node(n) else None
    return v if isinstance(v, TensorMeta) else None


def _loadable(m):
    return m is not None and m.dtype.name in LOADABLE


def scalar_compute(node):
    """The compute dtype name of a scalar-table node, or None when it has no C form."""
    fn = node.target.lowering.detail
    out = _meta(node)
    sf = _sf.get(fn)
    if sf.rule in ("compare", "predicate"):
        ops = node.args[1:] if fn == "where" else node.args
        pairs = [(_meta(a).dtype, _meta(a).ndim) for a in ops if _meta(a) is not None]
        scalars = [a for a in ops if not is_node(a)]
        scalars += [a.meta["val"]() for a in ops if is_node(a) and _meta(a) is None]
        comp = compute_name(_dt.result_type_of(pairs, scalars))
    else:
        comp = compute_name(out.dtype)
    if comp not in _sf._CTYPES or not _sf.has_c(fn, comp):
        return None
    kind = "b" if comp == "bool" else ("u" if comp.startswith("uint") else
                                       ("i" if comp.startswith("int") else "f"))
    if kind not in sf.kinds and not (kind == "u" and "i" in sf.kinds):
        return None  # the op itself handles this dtype (sign of a bool), not the formula
    return comp


def reduction_dims(node):
    x = _meta(node.args[0])
    dims = node.kwargs.get("dims", node.args[1] if len(node.args) > 1 else None)
    if dims is None:
        dims = tuple(range(x.ndim))
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(sorted({d % x.ndim for d in dims})) if x.ndim else ()


def _key_ok(key, shape):
    from .. import sizes as _sizes
    d = 0
    for k in key:
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            if not isinstance(_sizes.size(shape[d]), int) and k < 0:
                return False
        elif isinstance(k, tuple) and len(k) == 3:
            if not isinstance(_sizes.size(shape[d]), int) and k != (None, None, None):
                return False
        else:
            return False
        d += 1
    return d <= len(shape)


def kind_of(node):
    """``placeholder``, ``scalar_input``, ``constant``, ``pointwise``, ``reduction`` or
    ``eager`` (see the module docstring)."""
    if node.op == "placeholder":
        return "placeholder" if _meta(node) is not None else "scalar_input"
    if node.op != "call_function" or not isinstance(node.target, Op):
        return "eager"
    op, name, out = node.target, node.target.name, _meta(node)
    if name == "tensor":
        return "constant"
    if not _loadable(out) or op.n_out != 1:
        return "eager"
    tensor_args = [a for a in node.args if is_node(a)]
    if not all(_loadable(_meta(a)) or (_meta(a) is None and a.op == "placeholder")
               for a in tensor_args):
        return "eager"
    if op.lowering is not None and op.lowering.kind == "scalar":
        if set(node.kwargs) - {"alpha"} or node.kwargs.get("alpha", 1) != 1:
            return "eager"
        if any(not is_node(a) and not isinstance(a, (bool, int, float)) for a in node.args):
            return "eager"
        return "pointwise" if scalar_compute(node) is not None else "eager"
    if name in REDUCTIONS:
        x = _meta(node.args[0])
        if x is None or x.ndim == 0 or not reduction_dims(node):
            return "eager"
        if name in ("sum", "prod") and node.kwargs.get("dtype") not in (None,):
            if compute_name(out.dtype) not in _sf._CTYPES:
                return "eager"
        return "reduction"
    if name in MOVEMENT:
        if not is_node(node.args[0]) or _meta(node.args[0]) is None:
            return "eager"
        if name in ("slice", "select", "_index_view"):
            return "pointwise" if _key_ok(node.kwargs["key"], _meta(node.args[0]).shape) \
                else "eager"
        return "pointwise"
    if name == "_to_copy":
        return "pointwise" if _loadable(_meta(node.args[0])) else "eager"
    if name == "full":
        fv = node.kwargs.get("fill_value")
        return "pointwise" if isinstance(fv, (bool, int, float)) else "eager"
    if name == "arange":
        return "pointwise" if out.dtype.name in ("int64", "float32", "float64", "int32") \
            else "eager"
    return "eager"
