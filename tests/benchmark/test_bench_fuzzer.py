"""Fuzzer: reproducible by seed, same draws as torch's Fuzzer, constraints honoured."""
import numpy as np
import pytest
import torch
import torch.utils.benchmark as tb

import ember
from ember.utils.benchmark import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias


def build(lib, seed, bench):
    params = [
        [bench.FuzzedParameter(f"k{i}", minval=1, maxval=64, distribution="loguniform")
         for i in range(3)],
        bench.FuzzedParameter("dim", minval=1, maxval=3, distribution="uniform"),
        bench.FuzzedParameter("step", minval=1, maxval=3, distribution="uniform", strict=True),
        bench.FuzzedParameter("scale", minval=0.5, maxval=2.0, distribution="uniform"),
    ]
    tensors = [bench.FuzzedTensor("x", size=("k0", "k1", "k2"), steps=("step", 1, "step"),
                                  dim_parameter="dim", probability_contiguous=0.5,
                                  max_elements=16 * 1024, dtype=lib.float64),
               bench.FuzzedTensor("y", size=("k1", 4), min_elements=8, dtype=lib.int32)]
    return bench.Fuzzer(params, tensors, constraints=[lambda p: p["k0"] >= p["k2"]], seed=seed)


def draws(fuzzer, n=25):
    out = []
    for tensors, props, params in fuzzer.take(n):
        out.append(({k: (tuple(t.shape), tuple(t.stride()), t.numpy().copy())
                     for k, t in tensors.items()}, props, params))
    return out


def test_same_draws_as_torch_and_reproducible():
    ours = draws(build(ember, 123, ember.utils.benchmark))
    theirs = draws(build(torch, 123, tb))
    for (et, ep, epar), (tt, tp, tpar) in zip(ours, theirs):
        assert epar == tpar
        for name in et:
            assert et[name][:2] == tt[name][:2]  # sizes and strides (layout) agree
            for key in ("numel", "steps", "is_contiguous"):
                assert ep[name][key] == tp[name][key]
            np.testing.assert_array_equal(ep[name]["order"], tp[name]["order"])
            assert ep[name]["dtype"].split(".")[1] == tp[name]["dtype"].split(".")[1]
    again = draws(build(ember, 123, ember.utils.benchmark))
    for (a, _, pa), (b, _, pb) in zip(ours, again):
        assert pa == pb
        for name in a:  # tensor values repeat too: the seed also seeds ember's RNG
            np.testing.assert_array_equal(a[name][2], b[name][2])
    other = draws(build(ember, 124, ember.utils.benchmark))
    assert [p for *_, p in other] != [p for *_, p in ours]


def test_constraints_limits_and_layouts():
    fuzzer = build(ember, 7, ember.utils.benchmark)
    seen_noncontig = seen_contig = False
    for tensors, props, params in fuzzer.take(60):
        assert params["k0"] >= params["k2"]
        x, y = tensors["x"], tensors["y"]
        assert x.dim() == params["dim"] and x.dtype == ember.float64 and y.dtype == ember.int32
        assert x.numel() <= 16 * 1024 and y.numel() >= 8
        assert x.shape == tuple([params["k0"], params["k1"], params["k2"]][:params["dim"]])
        assert props["x"]["numel"] == x.numel() and props["x"]["is_contiguous"] == x.is_contiguous()
        seen_noncontig |= not x.is_contiguous()
        seen_contig |= x.is_contiguous()
        assert ((y.numpy() >= 1) & (y.numpy() < 127)).all()
        assert ((x.numpy() >= 0) & (x.numpy() < 1)).all()
        assert 0.5 <= params["scale"] <= 2.0 and isinstance(params["scale"], float)
    assert seen_noncontig and seen_contig
    assert 0 < fuzzer.rejection_rate < 1


@pytest.mark.parametrize("strict", [True, False])
def test_strict_parameter_is_not_resampled(strict):
    tried = []

    def only_n1(p):
        tried[-1].append(p["s"])
        return p["n"] == 1

    f = Fuzzer([FuzzedParameter("s", 1, 1000, distribution="uniform", strict=strict),
                FuzzedParameter("n", 1, 5, distribution="uniform")], [],
               constraints=[only_n1], seed=3)
    for _ in range(10):
        tried.append([])
        (_, _, p), = f.take(1)  # a fresh take replays the seed; use separate seeds below
        f._seed += 1
        assert p["s"] == tried[-1][-1]
    retried = [t for t in tried if len(t) > 1]
    assert retried
    assert all(len(set(t)) == 1 for t in retried) == strict


def test_aliases_custom_distributions_and_errors():
    params = [FuzzedParameter("n", minval=2, maxval=9, distribution="uniform"),
              FuzzedParameter("m", distribution={1: 0.5, ParameterAlias("n"): 0.5}),
              FuzzedParameter("roll", distribution={1: 1.0})]
    f = Fuzzer(params, [FuzzedTensor("a", size=("n", "m"), roll_parameter="roll",
                                     probability_contiguous=1.0)], seed=0)
    ms = set()
    for tensors, _, p in f.take(40):
        assert p["m"] in (1, p["n"])
        ms.add(p["m"] == 1)
        assert tensors["a"].shape == (p["m"], p["n"])  # rolled by one place
        assert tensors["a"].is_contiguous()
    assert ms == {True, False}
    with pytest.raises(ValueError, match="cycle"):
        next(Fuzzer([FuzzedParameter("a", distribution={ParameterAlias("b"): 1.0}),
                     FuzzedParameter("b", distribution={ParameterAlias("a"): 1.0})],
                    [], seed=0).take(1))
    with pytest.raises(AssertionError, match="not normalized"):
        FuzzedParameter("p", distribution={1: 0.3, 2: 0.3})
    with pytest.raises(AssertionError, match="Unknown distribution"):
        FuzzedParameter("p", 1, 2, distribution="normal")
    with pytest.raises(ValueError, match="Duplicate names"):
        Fuzzer([FuzzedParameter("x", 1, 2, distribution="uniform")], [FuzzedTensor("x", (1,))])
    impossible = Fuzzer([FuzzedParameter("n", 1, 4, distribution="uniform")],
                        [FuzzedTensor("t", ("n",), min_elements=5)], seed=0)
    with pytest.raises(ValueError, match="Failed to generate"):
        next(impossible.take(1))


def test_loguniform_bounds_and_custom_constructor():
    p = FuzzedParameter("s", minval=3, maxval=1000, distribution="loguniform")
    state = np.random.RandomState(0)
    vals = [p.sample(state) for _ in range(2000)]
    assert min(vals) >= 3 and max(vals) <= 1000 and all(isinstance(v, int) for v in vals)
    assert np.mean(np.array(vals) < 55) == pytest.approx(0.5, abs=0.05)  # 55 ~ geometric mid

    def ones(size, dtype, **params):
        return ember.full(size, float(params["v"]), dtype=dtype)

    f = Fuzzer([FuzzedParameter("v", 1, 5, distribution="uniform")],
               [FuzzedTensor("t", (3, 4), steps=(2, 1), tensor_constructor=ones)], seed=1)
    for tensors, props, p in f.take(5):
        t = tensors["t"]
        assert t.shape == (3, 4) and not t.is_contiguous() and props["t"]["steps"] == (2, 1)
        assert (t.numpy() == p["v"]).all()
