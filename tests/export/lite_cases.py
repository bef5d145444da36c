"""Calls of every primitive, for the lite-runtime parity test: recorded while the operator
database's samples run in ember (a dispatch mode sees each primitive call with its real
arguments), plus direct calls for the primitives no public function reaches eagerly
(the RNG, stop-gradient, creation, ...).  `one_op_program` makes a graph of one call."""
import collections
import operator
import warnings

import numpy as np

import ember
from ember import DispatchMode
from ember._core.meta import meta_of
from ember._core.op import REGISTRY
from ember.fx import Graph, GraphModule
from ember.ops.primitives import PRIMITIVES, rng_key
from opdb.all import OPS
from opdb.core import to_lib

PER_KEY = 2  # calls kept per (primitive, dtype of the first tensor)


def _copy(a):
    if isinstance(a, ember.Tensor):
        return ember.from_numpy(np.array(a.detach()._data, copy=True))
    if isinstance(a, (list, tuple)):
        return type(a)(_copy(x) for x in a)
    return a


class _Record(DispatchMode):
    def __init__(self, calls):
        self.calls = calls

    def __ember_dispatch__(self, op, args, kwargs):
        base = getattr(op, "base", op)
        name = getattr(base, "name", None)
        keep = False
        if name in PRIMITIVES:
            first = next((a.dtype for a in args if isinstance(a, ember.Tensor)), None)
            keep = sum(1 for c in self.calls[name] if c[0] == first) < PER_KEY and all(
                isinstance(a, (ember.Tensor, int, float, bool, complex, type(None)))
                for a in args)
            saved = _copy(tuple(args)) if keep else None
        out = op(*args, **kwargs)
        if keep:  # only calls the kernel accepted
            self.calls[name].append((first, saved, dict(kwargs)))
        return out


def _direct(calls):
    """Primitives that no public function calls eagerly (their callers decompose into them
    only under compile/export)."""
    R = REGISTRY
    f = ember.from_numpy
    rng = np.random.default_rng(5)
    seed, off = rng_key()
    x = f(rng.standard_normal((3, 4)))
    extra = [
        ("_rng_uniform", (seed, off), {"shape": (2, 3), "dtype": np.dtype(np.float32)}),
        ("_rng_uniform", (seed, off), {"shape": (4,), "dtype": np.dtype(np.float64)}),
        ("_stop_gradient", (x,), {}),
        ("full", (), {"shape": (2, 3), "fill_value": 1.5, "dtype": np.dtype(np.float32)}),
        ("full", (), {"shape": (3,), "fill_value": 7, "dtype": np.dtype(np.int64)}),
        ("arange", (), {"start": 0, "end": 7, "step": 2, "dtype": np.dtype(np.int64)}),
        ("arange", (), {"start": 0.5, "end": 2.0, "step": 0.25,
                        "dtype": np.dtype(np.float32)}),
        ("tensor", (), {"data": ((1.0, 2.0), (3.0, 4.5)), "dtype": np.dtype(np.float64)}),
        ("_to_device", (x,), {"backend": "cpu"}),
        ("standard_gamma_grad", (f(rng.uniform(0.5, 3, 5)), f(rng.uniform(0.1, 4, 5))), {}),
        ("as_strided", (x,), {"size": (2, 2), "stride": (1, 2), "storage_offset": 1,
                              "rel": 1}),
        ("view_dtype", (x,), {"dtype": np.dtype(np.int64)}),
        ("_reshape_copy", (x.t(),), {"shape": (12,)}),
    ]
    for name, args, kwargs in extra:
        if name == "view_dtype":
            x.view(ember.int64)  # declares the operator on first use
        if name in R:
            calls[name].append((None, args, kwargs))


def collect():
    """``{primitive name: [(first dtype, args, kwargs), ...]}``."""
    calls = collections.defaultdict(list)
    rng = np.random.default_rng(1234)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in OPS:
            for dt in op.dtypes:
                for s in op.samples(dt, rng):
                    try:
                        with _Record(calls):
                            op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
                    except Exception:  # noqa: BLE001 - error samples are test_opdb's
                        pass
    _direct(calls)
    return calls


def one_op_program(name, args, kwargs):
    """(GraphModule calling ``name`` once on placeholders for its tensor arguments, the
    tensors it takes, ember's eager outputs as a tuple of NumPy arrays)."""
    op = REGISTRY[name]
    graph = Graph()
    inputs, gargs = [], []
    for i, a in enumerate(args):
        if isinstance(a, ember.Tensor):
            p = graph.placeholder(f"x{i}")
            p.meta["val"] = meta_of(a)
            inputs.append(a)
            gargs.append(p)
        else:
            gargs.append(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = op(*_copy(tuple(args)), **kwargs)
    node = graph.call_function(op, tuple(gargs), dict(kwargs))
    outs = out if isinstance(out, (tuple, list)) else (out,)
    node.meta["val"] = tuple(meta_of(o) for o in outs) if isinstance(out, (tuple, list)) \
        else meta_of(out)
    if isinstance(out, (tuple, list)):
        items = []
        for i, o in enumerate(outs):
            g = graph.call_function(operator.getitem, (node, i))
            g.meta["val"] = meta_of(o)
            items.append(g)
        graph.output(tuple(items))
    else:
        graph.output((node,))
    expected = tuple(np.asarray(o.detach()._data) for o in outs)
    return GraphModule({}, graph), inputs, expected
