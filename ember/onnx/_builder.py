"""Building an ONNX graph: fresh value names, nodes, constants, and sizes as int64 tensors.

Lowerings (``_ops_*``) write nodes through a `Builder`.  A value is named by a string; a
`Value` pairs that name with the ember metadata of the graph node it stands for, so a
lowering reads shapes and dtypes without asking ONNX.  Symbolic sizes (the ``SymInt``s of
dynamic shapes, expressions over ``s0, s1, ...``) are computed inside the ONNX graph from
``Shape`` of the inputs that bind each symbol, so one model serves every size.
"""
import ast

import numpy as np

from .._core import dtype as _dt
from .._inductor import sizes as _sizes
from .errors import OnnxExporterError

__all__ = ["Builder", "Value", "onnx_dtype"]


class Value:
    """An ONNX value name with the ember metadata (``shape``, ``dtype``) it carries."""
    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"Value({self.name!r}, {list(self.shape)}, {self.dtype})"


def onnx_dtype(d):
    """The ``onnx.TensorProto`` element type of an ember dtype (or NumPy dtype)."""
    from onnx import TensorProto as T
    name = d.name if isinstance(d, _dt.dtype) else np.dtype(d).name
    table = {"float32": T.FLOAT, "float64": T.DOUBLE, "float16": T.FLOAT16,
             "bfloat16": T.BFLOAT16, "int8": T.INT8, "int16": T.INT16, "int32": T.INT32,
             "int64": T.INT64, "uint8": T.UINT8, "uint16": T.UINT16, "uint32": T.UINT32,
             "uint64": T.UINT64, "bool": T.BOOL, "complex64": T.COMPLEX64,
             "complex128": T.COMPLEX128, "float8_e4m3fn": T.FLOAT8E4M3FN,
             "float8_e5m2": T.FLOAT8E5M2}
    if name not in table:
        raise OnnxExporterError(f"ember.onnx.export: dtype {name} has no ONNX element type")
    return table[name]


def _size(d):
    return d if isinstance(d, _sizes.Sym) else _sizes.size(d)


def _np_dtype(d):
    return d.np if isinstance(d, _dt.dtype) else np.dtype(d)


class Builder:
    """The nodes and initializers of one ONNX graph under construction."""

    def __init__(self, opset):
        from onnx import helper, numpy_helper
        self._helper = helper
        self._numpy_helper = numpy_helper
        self.opset = opset
        self.nodes = []
        self.initializers = []
        self._used = set()
        self._consts = {}
        self.symbols = {}       # "s0" -> (value name, dim): where each size symbol is read
        self._sizes = {}        # size expression text -> name of its [1]-shaped int64 tensor

    def child(self):
        """A builder for a subgraph (an If branch, a Loop body): its own nodes; names,
        weights and input-size symbols shared; sizes computed so far readable (subgraphs see
        the enclosing graph's values), sizes it computes kept to itself."""
        c = Builder.__new__(Builder)
        c.__dict__.update(self.__dict__)
        c.nodes = []
        c._sizes = dict(self._sizes)
        return c

    def subgraph(self, name, inputs, outputs):
        """A GraphProto of this (child) builder's nodes: ``inputs`` are (name, ember dtype,
        shape or None) of its formal inputs, ``outputs`` the `Value`s it returns (copied to
        fresh names, as a subgraph output must be produced inside it)."""
        h = self._helper
        outs = []
        for v in outputs:
            name_out = self.op("Identity", [v])
            outs.append(h.make_tensor_value_info(name_out, onnx_dtype(v.dtype), None))
        ins = [h.make_tensor_value_info(n, onnx_dtype(d), shape) for n, d, shape in inputs]
        return h.make_graph(self.nodes, self.fresh(name), ins, outs)

    # ---- names and nodes ----------------------------------------------------------------

    def reserve(self, name):
        """Claim ``name`` exactly (graph inputs, outputs, initializers the user named)."""
        if name in self._used:
            raise OnnxExporterError(f"ember.onnx.export: the name {name!r} is used twice")
        self._used.add(name)
        return name

    def fresh(self, hint):
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in str(hint)) or "v"
        name, i = base, 0
        while name in self._used:
            i += 1
            name = f"{base}_{i}"
        self._used.add(name)
        return name

    def op(self, op_type, inputs, *, outputs=1, name_hint=None, **attrs):
        """Add one node; returns its output name (a list of names for ``outputs`` > 1).
        ``inputs`` are names, `Value`s or None (an omitted optional input)."""
        ins = ["" if i is None else (i.name if isinstance(i, Value) else i) for i in inputs]
        while ins and ins[-1] == "" and op_type != "Loop":  # Loop keeps its optional cond slot
            ins.pop()
        outs = [self.fresh(name_hint or op_type.lower()) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self._helper.make_node(op_type, ins, outs,
                                                 name=self.fresh("n_" + op_type), **attrs))
        return outs[0] if outputs == 1 else outs

    # ---- constants ----------------------------------------------------------------------

    def initializer(self, name, array):
        """A named initializer (a parameter or buffer), exactly ``name``."""
        self.initializers.append(self._numpy_helper.from_array(np.array(array, order="C"),
                                                               name))
        return name

    def const(self, value, dtype=None):
        """A constant tensor of ``value`` (array or number) in ``dtype`` (an ember or NumPy
        dtype); equal small constants are shared."""
        arr = np.asarray(value, dtype=None if dtype is None else _np_dtype(dtype))
        key = (arr.dtype.str, arr.shape, arr.tobytes()) if arr.size <= 64 else None
        if key is not None and key in self._consts:
            return self._consts[key]
        name = self.fresh("const")
        self.initializers.append(self._numpy_helper.from_array(np.array(arr, order="C"), name))
        if key is not None:
            self._consts[key] = name
        return name

    def scalar(self, value, dtype):
        """A 0-d constant of ``value`` in ``dtype``."""
        return self.const(np.asarray(value).astype(_np_dtype(dtype)))

    def cast(self, v, to, frm=None):
        """``v`` (a Value, or a name with its dtype ``frm``) converted to ember dtype ``to``."""
        name = v.name if isinstance(v, Value) else v
        frm = v.dtype if isinstance(v, Value) else frm
        if frm is not None and frm == to:
            return name
        return self.op("Cast", [name], to=onnx_dtype(to))

    # ---- sizes --------------------------------------------------------------------------

    def bind_symbols(self, value):
        """Record the dims of graph input ``value`` that are bare symbols (``s0``), so sizes
        over that symbol are read off this input."""
        for i, d in enumerate(value.shape):
            s = _size(d)
            if isinstance(s, str) and s.isidentifier() and s not in self.symbols:
                self.symbols[s] = (value.name, i)

    def is_static(self, d):
        return isinstance(_size(d), int)

    def size1(self, d):
        """A [1]-shaped int64 tensor holding size ``d`` (an int, a SymInt or a `sizes.Sym`)."""
        s = _size(d)
        if isinstance(s, int):
            return self.const(np.array([s], dtype=np.int64))
        text = _sizes.py_text(s)
        if text not in self._sizes:
            self._sizes[text] = self._emit(ast.parse(text, mode="eval").body, text)
        return self._sizes[text]

    def size0(self, d):
        """A 0-d int64 tensor holding size ``d``."""
        if self.is_static(d):
            return self.const(np.array(int(d), dtype=np.int64))
        return self.op("Squeeze", [self.size1(d), self.const(np.array([0], dtype=np.int64))])

    def shape_tensor(self, shape):
        """A 1-D int64 tensor of ``shape`` (ints and symbolic sizes; -1 allowed)."""
        if all(self.is_static(d) for d in shape):
            return self.const(np.array([int(d) for d in shape], dtype=np.int64).reshape(-1))
        return self.op("Concat", [self.size1(d) for d in shape], axis=0)

    def _emit(self, e, text):
        if isinstance(e, ast.Constant) and isinstance(e.value, int):
            return self.const(np.array([e.value], dtype=np.int64))
        if isinstance(e, ast.Name):
            if e.id not in self.symbols:
                raise OnnxExporterError(
                    f"ember.onnx.export: the size {text!r} uses symbol {e.id!r}, which no input "
                    f"dimension of the graph provides")
            if e.id not in self._sizes:
                src, dim = self.symbols[e.id]
                self._sizes[e.id] = self.op("Shape", [src], start=dim, end=dim + 1,
                                            name_hint=e.id)
            return self._sizes[e.id]
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return self.op("Neg", [self._emit(e.operand, text)])
        if isinstance(e, ast.BinOp):
            a, b = self._emit(e.left, text), self._emit(e.right, text)
            if isinstance(e.op, ast.FloorDiv):  # sizes are non-negative: Div truncates = floors
                return self.op("Div", [a, b])
            kind = {ast.Add: "Add", ast.Sub: "Sub", ast.Mult: "Mul", ast.Mod: "Mod"}.get(
                type(e.op))
            if kind is not None:
                return self.op(kind, [a, b])
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("max",
                                                                                     "min"):
            return self.op(e.func.id.capitalize(), [self._emit(x, text) for x in e.args])
        raise OnnxExporterError(f"ember.onnx.export: cannot compute the symbolic size {text!r} "
                                f"in ONNX (unsupported expression {ast.dump(e)})")
