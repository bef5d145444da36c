"""The op database through the inductor backend: each record's first sample, recorded op
by op (tests/_inductor/helpers), compiled, equals eager -- with the NumPy kernels for
every dtype, and with C kernels for float32 (built once, then loaded from the disk cache).
Random ops are left out (a compiled graph draws anew), and so are in-place and ``out=``
records (graphs are functional: the capture layer writes mutations back)."""
import numpy as np
import pytest

import ember
from ember._inductor import compile_fx, config
from ember._inductor.passes.record import record_graph
from opdb.all import OPS
from opdb.core import to_lib
from opdb.sample_tensors import flat_tensors, rebuild, tensor_leaves

_LEFT_OUT = ("_out", "-out", "inplace", "setitem", "-train")


def _records():
    for op in OPS:
        if any(k in op.name for k in _LEFT_OUT):
            continue
        yield op




def _run(op, dtype):
    samples = list(op.samples(dtype, np.random.default_rng(0)))[:1]
    for s in samples:
        args = tuple(to_lib(ember, a) for a in s.args)
        kwargs = {k: to_lib(ember, v) for k, v in s.kwargs.items()}
        ts = []
        tensor_leaves((args, kwargs), ts)

        def fn(*xs):
            a, k = rebuild((args, kwargs), iter(xs))
            out = op.call(ember, a, k)
            flat = flat_tensors(out)
            return tuple(flat) if flat else out
        try:
            gm, ref = record_graph(fn, *ts)
        except Exception:  # noqa: BLE001 - a sample eager rejects is test_opdb's business
            continue
        want = flat_tensors(ref)
        if not want or any(getattr(n.target, "category", None) in ("random", "distributions")
                           for n in gm.graph.nodes if n.op == "call_function"):
            continue
        compiled = compile_fx(gm, ts)
        assert compiled.reason is None, compiled.reason
        got = compiled(*ts)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype
            a, b = np.asarray(g._data), np.asarray(w._data)
            if w.dtype.is_floating_point or w.dtype.is_complex:
                half = dtype in ("float16", "bfloat16")
                rtol = op.half_rtol * 2 if half else max(op.rtol, 1e-5) * 10
                atol = op.half_atol * 2 if half else max(op.atol, 1e-5) * 10
                ct = np.complex128 if w.dtype.is_complex else np.float64
                np.testing.assert_allclose(a.astype(ct), b.astype(ct), rtol=rtol, atol=atol,
                                           equal_nan=True)
            else:
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op", list(_records()), ids=lambda o: o.name)
def test_numpy_kernels(op, monkeypatch):
    monkeypatch.setattr(config, "cc", None)
    for dtype in op.dtypes:
        _run(op, dtype)


@pytest.mark.parametrize("op", [o for o in _records() if "float32" in o.dtypes],
                         ids=lambda o: o.name)
def test_c_kernels_float32(op):
    _run(op, "float32")


@pytest.mark.parametrize("op", [o for o in _records() if "float32" in o.dtypes],
                         ids=lambda o: o.name)
def test_cpp_wrapper_float32(op, monkeypatch):
    # one C entry point where the graph allows (views, matmuls, gathers in C), the Python
    # wrapper elsewhere: equal to eager either way
    monkeypatch.setattr(config, "cpp_wrapper", True)
    _run(op, "float32")
