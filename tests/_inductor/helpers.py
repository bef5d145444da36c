"""Shared helpers: graphs recorded from plain functions, compiled both ways, compared."""
import numpy as np

import ember
from ember._inductor import compile_fx
from ember._inductor.passes.record import record_graph

TOL = {"float32": (2e-5, 2e-5), "float64": (1e-12, 1e-12), "bfloat16": (2e-2, 2e-2),
       "float16": (2e-3, 2e-3)}


class SymInt(int):
    """A stand-in for ember._dynamo.symbolic.SymInt: an int with an ``expr``."""

    def __new__(cls, value, expr):
        s = int.__new__(cls, value)
        s.expr = expr
        return s


def compile_fn(fn, *inputs, options=None):
    gm, ref = record_graph(fn, *inputs)
    compiled = compile_fx(gm, list(inputs), options)
    return compiled, (ref if isinstance(ref, tuple) else (ref,))


def assert_close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        a = np.asarray(g._data).astype(np.float64) if g.dtype.is_floating_point else \
            np.asarray(g._data)
        b = np.asarray(w._data).astype(np.float64) if w.dtype.is_floating_point else \
            np.asarray(w._data)
        if g.dtype.is_floating_point:
            rtol, atol = TOL[g.dtype.name]
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(a, b)


def check(fn, *inputs, kernels=None, options=None):
    """Compile ``fn``, compare with eager (ember's own kernels), return the compiled graph."""
    compiled, want = compile_fn(fn, *inputs, options=options)
    assert compiled.reason is None, compiled.reason
    got = compiled(*inputs)
    assert_close(got, want)
    if kernels is not None:
        assert compiled.kernel_count == kernels, compiled.source
    return compiled


def to_torch(t):
    import torch  # the oracle, imported only by the tests that compare with it
    return torch.from_numpy(np.asarray(t._data).astype(np.float64))


def rand(*shape, dtype=ember.float32, seed=0):
    rng = np.random.default_rng(seed)
    return ember.from_numpy(rng.standard_normal(shape).astype(np.float64)).to(dtype)
