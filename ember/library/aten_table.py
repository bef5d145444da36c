"""``ember.ops.aten``: torch's ATen operator names, resolved to ember's implementations.

Each entry is an overload's schema (torch's text) and the function that runs it: ember's
public function of that name (``ember.<name>``, ``ember.nn.functional.<name>``), the Tensor
method for in-place ``name_`` overloads, or an adapter for the ATen-only signatures programs
and decomposition tables call (``convolution``, ``native_batch_norm``, ``native_layer_norm``,
``_to_copy``, ``sym_size``...; see `aten_adapters`).  A name outside the table is an aten
operator when ember has a public function of that name: it gets a ``default`` overload
whose schema is read from the function's signature.
"""
import inspect

from .. import ops as _ops
from .. import fft as _fft, linalg as _linalg, special as _special
from ..nn import functional as _F
from ..ops.op_namespaces import register_provider
from . import aten_adapters as _A

__all__ = ["ATEN", "aten_overloads"]


def _method(name):
    def call(self, *args, **kwargs):
        return getattr(self, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _public(name):
    for space in (_ops, _F):
        f = getattr(space, name, None)
        if callable(f) and not isinstance(f, type) and \
                getattr(f, "__module__", "").startswith("ember"):
            return f
    for prefix, space in (("special_", _special), ("linalg_", _linalg), ("fft_", _fft)):
        if name.startswith(prefix):
            f = getattr(space, name[len(prefix):], None)
            if callable(f):
                return f
    return None


_BIN = "(Tensor self, Tensor other) -> Tensor"
_BIN_S = "(Tensor self, Scalar other) -> Tensor"
_UNARY = "(Tensor self) -> Tensor"

# op name -> [(overload, signature after the name, implementation or None for the default)]
ATEN = {
    "add": [("Tensor", "(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", None),
            ("Scalar", "(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", None),
            ("out", "(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
             None)],
    "sub": [("Tensor", "(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", None),
            ("Scalar", "(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", None),
            ("out", "(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
             None)],
    "mul": [("Tensor", _BIN, None), ("Scalar", _BIN_S, None),
            ("out", "(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", None)],
    "div": [("Tensor", _BIN, None), ("Scalar", _BIN_S, None),
            ("Tensor_mode", "(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor", None),
            ("out", "(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", None)],
    "pow": [("Tensor_Tensor", "(Tensor self, Tensor exponent) -> Tensor", None),
            ("Tensor_Scalar", "(Tensor self, Scalar exponent) -> Tensor", None),
            ("Scalar", "(Scalar self, Tensor exponent) -> Tensor", None)],
    "mm": [("default", "(Tensor self, Tensor mat2) -> Tensor", None)],
    "bmm": [("default", "(Tensor self, Tensor mat2) -> Tensor", None)],
    "matmul": [("default", _BIN, None)],
    "addmm": [("default", "(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
                          "Scalar alpha=1) -> Tensor", None)],
    "linear": [("default", "(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", None)],
    "t": [("default", "(Tensor(a) self) -> Tensor(a)", None)],
    "view": [("default", "(Tensor(a) self, SymInt[] size) -> Tensor(a)", _A.view)],
    "_unsafe_view": [("default", "(Tensor self, SymInt[] size) -> Tensor", _A.view)],
    "reshape": [("default", "(Tensor(a) self, SymInt[] shape) -> Tensor(a)", None)],
    "expand": [("default", "(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
                _A.expand)],
    "permute": [("default", "(Tensor(a) self, int[] dims) -> Tensor(a)", None)],
    "transpose": [("int", "(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", None)],
    "unsqueeze": [("default", "(Tensor(a) self, int dim) -> Tensor(a)", None)],
    "squeeze": [("default", "(Tensor(a) self) -> Tensor(a)", None),
                ("dim", "(Tensor(a) self, int dim) -> Tensor(a)", None),
                ("dims", "(Tensor(a) self, int[] dim) -> Tensor(a)", None)],
    "flatten": [("using_ints", "(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
                 None)],
    "select": [("int", "(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", None)],
    "slice": [("Tensor", "(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
                         "SymInt step=1) -> Tensor(a)", _A.slice_)],
    "cat": [("default", "(Tensor[] tensors, int dim=0) -> Tensor", None)],
    "stack": [("default", "(Tensor[] tensors, int dim=0) -> Tensor", None)],
    "split": [("Tensor", "(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
               None)],
    "clone": [("default", "(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", None)],
    "alias": [("default", "(Tensor(a) self) -> Tensor(a)", _A.alias)],
    "detach": [("default", "(Tensor(a) self) -> Tensor(a)", _method("detach"))],
    "contiguous": [("default", "(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format)"
                               " -> Tensor(a)", _method("contiguous"))],
    "_to_copy": [("default", "(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
                             "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
                             "MemoryFormat? memory_format=None) -> Tensor", _A.to_copy)],
    "sym_size": [("int", "(Tensor self, int dim) -> SymInt", _A.sym_size)],
    "sym_numel": [("default", "(Tensor self) -> SymInt", _A.sym_numel)],
    "sym_stride": [("int", "(Tensor self, int dim) -> SymInt", _A.sym_stride)],
    "sum": [("default", "(Tensor self, *, ScalarType? dtype=None) -> Tensor", None),
            ("dim_IntList", "(Tensor self, int[1]? dim, bool keepdim=False, *, "
                            "ScalarType? dtype=None) -> Tensor", None)],
    "mean": [("default", "(Tensor self, *, ScalarType? dtype=None) -> Tensor", None),
             ("dim", "(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)"
                     " -> Tensor", None)],
    "amax": [("default", "(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", None)],
    "amin": [("default", "(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", None)],
    "argmax": [("default", "(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", None)],
    "max": [("default", _UNARY, None),
            ("dim", "(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                    "Tensor indices)", None)],
    "min": [("default", _UNARY, None),
            ("dim", "(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
                    "Tensor indices)", None)],
    "_softmax": [("default", "(Tensor self, int dim, bool half_to_float) -> Tensor",
                  _A.softmax)],
    "_log_softmax": [("default", "(Tensor self, int dim, bool half_to_float) -> Tensor",
                      _A.log_softmax)],
    "softmax": [("int", "(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", None)],
    "log_softmax": [("int", "(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", None)],
    "convolution": [("default", "(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, "
                                "SymInt[] padding, SymInt[] dilation, bool transposed, "
                                "SymInt[] output_padding, SymInt groups) -> Tensor",
                     _A.convolution)],
    "conv1d": [("default", "(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] "
                           "stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1)"
                           " -> Tensor", None)],
    "conv2d": [("default", "(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] "
                           "stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1)"
                           " -> Tensor", None),
               ("padding", "(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1,"
                           " str padding=\"valid\", SymInt[2] dilation=1, SymInt groups=1) -> "
                           "Tensor", None)],
    "native_batch_norm": [("default", "(Tensor input, Tensor? weight, Tensor? bias, Tensor? "
                                      "running_mean, Tensor? running_var, bool training, "
                                      "float momentum, float eps) -> (Tensor, Tensor, Tensor)",
                           _A.native_batch_norm)],
    "_native_batch_norm_legit_functional": [
        ("default", "(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor "
                    "running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, "
                    "Tensor, Tensor running_mean_out, Tensor running_var_out)",
         _A.native_batch_norm_functional)],
    "_native_batch_norm_legit": [
        ("default", "(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, "
                    "Tensor(b!) running_var, bool training, float momentum, float eps) -> "
                    "(Tensor, Tensor, Tensor)", _A.native_batch_norm),
        ("no_stats", "(Tensor input, Tensor? weight, Tensor? bias, bool training, float "
                     "momentum, float eps) -> (Tensor, Tensor, Tensor)",
         _A.native_batch_norm_no_stats)],
    "_native_batch_norm_legit_no_training": [
        ("default", "(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor "
                    "running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
         _A.native_batch_norm_no_training)],
    "native_layer_norm": [("default", "(Tensor input, SymInt[] normalized_shape, Tensor? weight,"
                                      " Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
                           _A.native_layer_norm)],
    "layer_norm": [("default", "(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                               "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> "
                               "Tensor", _A.layer_norm)],
    "max_pool2d": [("default", "(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
                               "padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                    _A.max_pool2d)],
    "avg_pool2d": [("default", "(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] "
                               "padding=0, bool ceil_mode=False, bool count_include_pad=True, "
                               "int? divisor_override=None) -> Tensor", _A.avg_pool2d)],
    "adaptive_avg_pool2d": [("default", "(Tensor self, SymInt[2] output_size) -> Tensor",
                             _A.adaptive_avg_pool2d)],
    "_adaptive_avg_pool2d": [("default", "(Tensor self, SymInt[2] output_size) -> Tensor",
                              _A.adaptive_avg_pool2d)],
    "hardtanh": [("default", "(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
                  None)],
    "embedding": [("default", "(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool "
                              "scale_grad_by_freq=False, bool sparse=False) -> Tensor",
                   _A.embedding)],
    "dropout": [("default", "(Tensor input, float p, bool train) -> Tensor", None)],
    "gelu": [("default", "(Tensor self, *, str approximate=\"none\") -> Tensor", None)],
    "where": [("self", "(Tensor condition, Tensor self, Tensor other) -> Tensor", None)],
    "masked_fill": [("Scalar", "(Tensor self, Tensor mask, Scalar value) -> Tensor", None),
                    ("Tensor", "(Tensor self, Tensor mask, Tensor value) -> Tensor", None)],
    "index_select": [("default", "(Tensor self, int dim, Tensor index) -> Tensor", None)],
    "gather": [("default", "(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> "
                           "Tensor", None)],
    "cumsum": [("default", "(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", None)],
    "zeros": [("default", "(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                          "Device? device=None, bool? pin_memory=None) -> Tensor",
               _A.factory("zeros"))],
    "ones": [("default", "(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                         "Device? device=None, bool? pin_memory=None) -> Tensor",
              _A.factory("ones"))],
    "empty": [("memory_format", "(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None,"
                                " Device? device=None, bool? pin_memory=None, MemoryFormat? "
                                "memory_format=None) -> Tensor", _A.factory("empty"))],
    "full": [("default", "(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? "
                         "layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
              _A.full)],
    "arange": [("default", "(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? "
                           "device=None, bool? pin_memory=None) -> Tensor", None),
               ("start", "(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout="
                         "None, Device? device=None, bool? pin_memory=None) -> Tensor", None),
               ("start_step", "(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype="
                              "None, Layout? layout=None, Device? device=None, bool? pin_memory="
                              "None) -> Tensor", None)],
    "scalar_tensor": [("default", "(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, "
                                  "Device? device=None, bool? pin_memory=None) -> Tensor",
                       _A.scalar_tensor)],
    "copy_": [("default", "(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
               _method("copy_"))],
    "item": [("default", "(Tensor self) -> Scalar", _method("item"))],
}

# elementwise ops: unary ``name(Tensor self) -> Tensor``, binary with Tensor/Scalar overloads,
# each with its in-place ``name_`` (the Tensor method)
_UNARY_OPS = ("abs", "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
              "sigmoid", "relu", "erf", "floor", "ceil", "round", "reciprocal", "sign",
              "logical_not", "bitwise_not", "expm1", "log1p", "silu", "hardswish", "asin",
              "acos", "atan", "sinh", "cosh", "log2", "exp2", "trunc", "isnan")
_BINARY_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "remainder", "fmod",
               "logical_and", "logical_or", "bitwise_and", "bitwise_or", "atan2")
for _n in _UNARY_OPS:
    ATEN.setdefault(_n, [("default", _UNARY, None)])
for _n in _BINARY_OPS:
    if _n in ("maximum", "minimum", "atan2", "logical_and", "logical_or"):
        ATEN.setdefault(_n, [("default", _BIN, None)])
    else:
        ATEN.setdefault(_n, [("Tensor", _BIN, None), ("Scalar", _BIN_S, None)])
for _n in ("add", "sub", "mul", "div", "relu", "sigmoid", "tanh", "neg", "exp", "sqrt", "abs",
           "clamp", "fill", "zero", "sin", "cos", "log", "pow", "masked_fill", "index_put"):
    if _n + "_" not in ATEN:
        entries = ATEN.get(_n, [("default", _UNARY, None)])
        ATEN[_n + "_"] = [(ov, "(Tensor(a!) self" + sig[len("(Tensor self"):].replace(
            "-> Tensor", "-> Tensor(a!)"), _method(_n + "_"))
            for ov, sig, _ in entries if sig.startswith("(Tensor self") and ov != "out"]
ATEN["fill_"] = [("Scalar", "(Tensor(a!) self, Scalar value) -> Tensor(a!)", _method("fill_")),
                 ("Tensor", "(Tensor(a!) self, Tensor value) -> Tensor(a!)", _method("fill_"))]
ATEN["pow_"] = [("Scalar", "(Tensor(a!) self, Scalar exponent) -> Tensor(a!)", _method("pow_")),
                ("Tensor", "(Tensor(a!) self, Tensor exponent) -> Tensor(a!)", _method("pow_"))]
ATEN["zero_"] = [("default", "(Tensor(a!) self) -> Tensor(a!)", _method("zero_"))]
ATEN["clamp"] = [("default", "(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", None),
                 ("Tensor", "(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", None)]
ATEN["clamp_"] = [("default", "(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> "
                              "Tensor(a!)", _method("clamp_"))]
# pinning: torch's CPU build raises without an accelerator (Tensor.pin_memory's error);
# torch_geometric registers its Index/EdgeIndex handlers on aten._pin_memory
ATEN["_pin_memory"] = [("default", "(Tensor self, Device? device=None) -> Tensor",
                        _method("pin_memory"))]
ATEN["pin_memory"] = [("default", "(Tensor(a) self, Device? device=None) -> Tensor(a)",
                       _method("pin_memory"))]
ATEN["is_pinned"] = [("default", "(Tensor self, Device? device=None) -> bool",
                      _method("is_pinned"))]
def _sparse_addmm(*args, **kwargs):
    from ..sparse import addmm  # ember.sparse sits above this table's imports
    return addmm(*args, **kwargs)


# overloads torch_geometric (Index, EdgeIndex, HashTensor) registers handlers on at import
ATEN["sort"] = [
    ("default", "(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor "
                "indices)", None),
    ("stable", "(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor "
               "values, Tensor indices)",
     lambda self, *, stable=None, dim=-1, descending=False: _ops.sort(
         self, dim, descending, stable=bool(stable)))]
ATEN["index"] = [("Tensor", "(Tensor self, Tensor?[] indices) -> Tensor",
                  lambda self, indices: self[tuple(slice(None) if i is None else i
                                                   for i in indices)])]
ATEN["unbind"] = [("int", "(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", None)]
ATEN["_sparse_addmm"] = [("default", "(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, "
                                     "Scalar alpha=1) -> Tensor", _sparse_addmm)]
ATEN["index_put_"] = [("default", "(Tensor(a!) self, Tensor?[] indices, Tensor values, bool "
                                  "accumulate=False) -> Tensor(a!)", _method("index_put_"))]


def _out_adapter(fn):
    def call(*args, out, **kwargs):
        return fn(*args, out=out, **kwargs)
    call.__name__ = getattr(fn, "__name__", "out")
    return call


# argument names that torch's schemas give to tensors
_TENSOR_NAMES = frozenset(("input", "self", "other", "tensor", "x", "y", "weight", "bias",
                           "mat", "mat1", "mat2", "vec", "vec1", "vec2", "target", "condition",
                           "index", "indices", "mask", "src", "source", "values", "exponent",
                           "end", "tensor1", "tensor2", "A", "B", "LU", "a", "b"))


def _signature_schema(name, fn):
    """A ``default`` schema read from a public function's signature (names outside the
    table): required parameters named as torch names tensors are Tensors (others ``Any``),
    the others typed by their default."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    parts, kw = [], False
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in ("out", "_stacklevel"):
            continue
        if p.kind is p.KEYWORD_ONLY and not kw:
            parts.append("*")
            kw = True
        d = p.default
        if d is p.empty:
            parts.append(f"{'Tensor' if p.name in _TENSOR_NAMES else 'Any'} {p.name}")
        elif isinstance(d, bool):
            parts.append(f"bool {p.name}={d}")
        elif isinstance(d, int):
            parts.append(f"int {p.name}={d}")
        elif isinstance(d, float):
            parts.append(f"float {p.name}={d!r}")
        elif isinstance(d, str):
            parts.append(f'str {p.name}="{d}"')
        else:
            parts.append(f"Any? {p.name}=None")
    return f"({', '.join(parts)}) -> Tensor"


def aten_overloads(name):
    """overload name -> (schema text, implementation) of ``aten::name``, or None."""
    entries = ATEN.get(name)
    public = _public(name)
    if entries is None:
        if public is None:
            return None
        sig = _signature_schema(name, public)
        if sig is None:
            return None
        entries = [("default", sig, public)]
    table = {}
    for overload, sig, impl in entries:
        fn = impl or public
        if fn is None:
            continue
        if overload == "out":
            fn = _out_adapter(fn)
        head = f"aten::{name}" + ("" if overload == "default" else f".{overload}")
        table[overload] = (head + sig, fn)
    return table or None


register_provider("aten", aten_overloads)
