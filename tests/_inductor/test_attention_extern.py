"""Compiled attention runs the blocked C flash-attention kernels (the ops are kept whole, not
decomposed into the L x S score matrix): a GPT compiled with the inductor equals eager,
forward and backward, and the C kernels are what ran."""
import os

import numpy as np
import pytest

import ember
from ember._core import ckernels
from ember._core.ckernels import attention as CA
from ember._inductor import config

from .helpers import assert_close, compile_fn, rand

# CI has a C compiler, so there the compiled path is always tested (a build failure fails)
needs_c = pytest.mark.skipif(not ckernels.status()["available"] and not os.environ.get("CI"),
                             reason=f"no compiled kernels here: {ckernels.status()['reason']}")


@pytest.fixture
def calls(monkeypatch):
    """Counts of the C kernels' entry points run."""
    seen = {"forward": 0, "backward": 0}
    for name in seen:
        real = getattr(CA, name)

        def counted(*a, _real=real, _name=name, **k):
            r = _real(*a, **k)
            seen[_name] += r is not None
            return r
        monkeypatch.setattr(CA, name, counted)
    return seen


def test_flash_ops_are_kept_whole():
    assert {"_flash_attention", "_flash_attention_backward"} <= config.keep_whole


@needs_c
def test_compiled_gpt_equals_eager(calls):
    """The benchmarks' GPT (pre-norm causal self-attention blocks), a training step."""
    from benchmarks.workloads_nn import tiny_gpt
    ember.manual_seed(0)
    model = tiny_gpt(ember, d=32, heads=4, seq=70, vocab=20, layers=2)
    idx = ember.from_numpy(np.random.default_rng(0).integers(0, 20, (2, 70)))
    params = list(model.parameters())

    def step(m):
        for p in params:
            p.grad = None
        out = m(idx)
        out.square().mean().backward()
        return out.detach(), [p.grad.clone() for p in params]

    ref_out, ref_grads = step(model)
    compiled = ember.compile(model, backend="inductor")
    calls.update(forward=0, backward=0)
    for _ in range(2):  # the second call runs the cached compiled graph
        out, grads = step(compiled)
        np.testing.assert_allclose(out.numpy(), ref_out.numpy(), atol=2e-5, rtol=2e-5)
        for g, r in zip(grads, ref_grads):
            np.testing.assert_allclose(g.numpy(), r.numpy(), atol=5e-5, rtol=5e-4)
    assert calls["forward"] >= 4 and calls["backward"] >= 4, calls


@needs_c
@pytest.mark.parametrize("cpp_wrapper", [False, True])
@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_recorded_graph_runs_the_c_kernel(calls, mask, cpp_wrapper):
    q, k, v = rand(2, 3, 70, 8), rand(2, 3, 90, 8, seed=1), rand(2, 3, 90, 8, seed=2)
    args = [q, k, v]
    if mask == "bool":
        args.append(ember.from_numpy(np.random.default_rng(3).random((70, 90)) > 0.3))
    elif mask == "float":
        args.append(rand(70, 90, seed=4))

    def f(*a):
        return ember.nn.functional.scaled_dot_product_attention(*a, scale=0.4)
    # (with cpp_wrapper the C entry point calls the C kernel itself, not through Python)
    compiled, ref = compile_fn(f, *args, options={"cpp_wrapper": cpp_wrapper})
    assert compiled.reason is None, compiled.reason
    assert compiled.cpp_wrapper == cpp_wrapper, compiled.cpp_wrapper_reason
    calls.update(forward=0)
    assert_close(compiled(*args), ref)
    assert calls["forward"] == (0 if cpp_wrapper else 1)
