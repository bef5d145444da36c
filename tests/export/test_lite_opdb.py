"""The op database through the program file and ember_lite: each record's first sample per
dtype, recorded op by op (as tests/_inductor/test_opdb_compiled does), saved (the lite
graph decomposes every op to primitives), loaded by ember_lite and run, equals ember eager;
ember.export's loader (and its graph verifier) accepts each file too.

Records the lite runtime cannot run are listed in ``CANNOT`` with the clear error they
must give (asserted, not skipped): ops whose output shape depends on the values keep their
kernels (no decomposition, so no lite kernel), optimizer updates are not inference, and a
Python autograd.Function class is code, which a program file never holds."""
import io
import warnings

import numpy as np
import pytest

import ember
import ember_lite
from ember._inductor.passes.record import record_graph
from ember.export.serde import load_program, save_program
from opdb.all import OPS
from opdb.core import to_lib
from opdb.sample_tensors import flat_tensors, rebuild, tensor_leaves

_LEFT_OUT = ("_out", "-out", "inplace", "setitem", "-train")
_NO_KERNEL = (RuntimeError, "the lite runtime has no kernel for operator")
CANNOT = {
    "masked_select": _NO_KERNEL, "nn.functional.one_hot": _NO_KERNEL,
    "autograd.Function": (ValueError, "calls the custom autograd.Function"),
}


def _cannot(name):
    if name.startswith("optim."):  # fused optimizer updates: kernels, not inference
        # (SparseAdam's sparse embedding gradient comes from a custom autograd.Function)
        return (Exception, r"no kernel for operator|cannot encode|custom autograd.Function"), \
            True
    if name in CANNOT:
        return CANNOT[name], True
    return (None, None), False




def _check(op, dtype, got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        b = np.asarray(w._data)
        assert g.shape == b.shape and g.dtype == b.dtype, (g.shape, b.shape, g.dtype, b.dtype)
        if b.dtype.kind in "fcV":
            half = dtype in ("float16", "bfloat16")
            rtol = op.half_rtol * 2 if half else max(op.rtol, 1e-5) * 10
            atol = op.half_atol * 2 if half else max(op.atol, 1e-5) * 10
            ct = np.complex128 if b.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(g.astype(ct), b.astype(ct), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=f"{op.name} {dtype}")
        else:
            np.testing.assert_array_equal(g, b, err_msg=f"{op.name} {dtype}")


def _run(op, dtype):
    """Runs the sample; returns whether a graph was made (eager accepted it)."""
    s = next(iter(op.samples(dtype, np.random.default_rng(0))), None)
    if s is None:
        return False
    args = tuple(to_lib(ember, a) for a in s.args)
    kwargs = {k: to_lib(ember, v) for k, v in s.kwargs.items()}
    ts = []
    tensor_leaves((args, kwargs), ts)

    def fn(*xs):
        a, k = rebuild((args, kwargs), iter(xs))
        flat = flat_tensors(op.call(ember, a, k))
        return tuple(flat) if flat else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            gm, ref = record_graph(fn, *ts)
        except Exception:  # noqa: BLE001 - a sample eager rejects is test_opdb's business
            return False
    want = flat_tensors(ref)
    if not want or any(getattr(n.target, "category", None) in ("random", "distributions")
                       for n in gm.graph.nodes if n.op == "call_function"):
        return False  # random draws: ember_lite's RNG primitive is tested in test_lite_ops
    buf = io.BytesIO()
    save_program(gm, buf)
    buf.seek(0)
    load_program(buf)  # the verifier accepts every graph ember saves
    buf.seek(0)
    # the NumPy kernels (one C build per one-op program would take minutes); the C
    # generator's ops are checked in test_lite_c, many to a program
    prog = ember_lite.load(buf, c_kernels=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = prog(*[np.array(t._data) for t in ts])
    _check(op, dtype, got, want)
    return True


def _records():
    return [op for op in OPS if not any(k in op.name for k in _LEFT_OUT)]


@pytest.mark.parametrize("op", _records(), ids=lambda o: o.name)
def test_opdb_through_the_lite_runtime(op):
    (exc, pattern), cannot = _cannot(op.name)
    if cannot:
        with pytest.raises(exc, match=pattern):
            for dtype in op.dtypes:
                _run(op, dtype)
        return
    for dtype in op.dtypes:
        _run(op, dtype)
