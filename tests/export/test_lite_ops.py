"""ember_lite's kernels equal ember eager, for every primitive.

Each primitive call recorded from the operator database (and the direct calls of
`lite_cases`) becomes a one-op program: saved with the program format, loaded by
ember_lite, run on the same inputs.  Integers and bools must be equal, float16/bfloat16
equal to the last bit, float32 within 1e-5 relative and float64 within 1e-12."""
import functools
import io
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember_lite
from ember._core.op import REGISTRY
from ember.export.serde import load_program, save_program
from ember.ops.primitives import PRIMITIVES

from . import lite_cases


@functools.lru_cache(maxsize=None)
def _calls():
    return lite_cases.collect()


def _close(got, want, what):
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, ember {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, ember {want.shape}"
    if want.dtype.kind in "biu" or want.dtype.kind == "V" or want.dtype == np.float16:
        wide = (lambda a: a.astype(np.float64)) if want.dtype.kind == "V" else (lambda a: a)
        np.testing.assert_array_equal(wide(got), wide(want), err_msg=what)
        return
    double = want.dtype in (np.float64, np.complex128)
    np.testing.assert_allclose(got, want, rtol=1e-12 if double else 1e-5,
                               atol=1e-12 if double else 1e-6, equal_nan=True, err_msg=what)


def _run_lite(gm, inputs):
    buf = io.BytesIO()
    save_program(gm, buf)
    buf.seek(0)
    load_program(buf)  # ember's loader (and its graph verifier) accepts the file too
    buf.seek(0)
    # the NumPy kernels (one C build per one-op program would take minutes); the C
    # generator's ops are checked in test_lite_c, many to a program
    prog = ember_lite.load(buf, c_kernels=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's warnings on the edge-case samples
        return prog(*[np.array(a._data) for a in inputs])


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitive_matches_ember(name):
    calls = _calls()[name]
    assert calls, f"no recorded call of primitive {name}: add one to lite_cases._direct"
    for first, args, kwargs in calls:
        gm, inputs, expected = lite_cases.one_op_program(name, args, kwargs)
        got = _run_lite(gm, inputs)
        assert len(got) == len(expected), name
        for i, (g, e) in enumerate(zip(got, expected)):
            _close(g, e, f"{name} ({first}, {kwargs}) output {i}")


def test_every_primitive_has_a_kernel_and_no_more():
    from ember_lite.kernels import KERNELS
    assert set(KERNELS) == set(PRIMITIVES)


def test_a_mismatch_is_caught():
    # the comparison above is real: a wrong kernel fails it
    from ember_lite.kernels import KERNELS
    first, args, kwargs = _calls()["exp"][0]
    gm, inputs, expected = lite_cases.one_op_program("exp", args, kwargs)
    saved = KERNELS["exp"]
    KERNELS["exp"] = KERNELS["expm1"]
    try:
        with pytest.raises(AssertionError):
            _close(_run_lite(gm, inputs)[0], expected[0], "exp")
    finally:
        KERNELS["exp"] = saved


def test_a_non_primitive_fails_to_load_naming_it():
    # a graph that kept a composite op (decompose leaves some whole) names it on load
    import ember
    from ember.fx import Graph, GraphModule
    from ember._core.meta import meta_of
    g = Graph()
    x = g.placeholder("x")
    x.meta["val"] = meta_of(ember.ones(3))
    n = g.call_function(REGISTRY["bernoulli"], (x,), {}) if "bernoulli" in REGISTRY else None
    assert n is not None
    n.meta["val"] = meta_of(ember.ones(3))
    g.output((n,))
    buf = io.BytesIO()
    save_program(GraphModule({}, g), buf)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="no kernel for operator.*bernoulli"):
        ember_lite.load(buf)


def test_lite_runtime_never_imports_ember():
    code = ("import ember_lite, sys, io, numpy\n"
            "bad = sorted(m for m in sys.modules if m == 'ember' or m.startswith('ember.'))\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
